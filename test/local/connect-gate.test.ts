// The gate on local mode's Spark 3.5 Connect servers (cluster/local/connect-gate.ts) as
// spark-submit gets it: its jar first in spark.jars, its class last among the interceptors (gRPC
// runs the last first), the pod's own kept, only for Spark's Connect server; built for 3.x only,
// against the jar the service fetched, once per Spark; and the one compile helper
// (spark-builds.ts) building it and the UI gate for real. The gate at work against a real 3.5.7
// server: test/connect/server-gate.test.ts.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { driverMainClass, localSubmitParts } from '../../cluster/local/spark-command.js';
import { buildConnectGate, CONNECT_GATE_CLASS, CONNECT_INTERCEPTORS_CONF, connectServerJar, ConnectGates } from '../../cluster/local/connect-gate.js';
import { CONNECT_SERVER_CLASS, CONNECT_SERVER_TOKEN_ENV } from '../../cluster/local/connect-server-token.js';
import { buildUiGate, gateClasses } from '../../cluster/local/ui-gate.js';
import { sparkJars } from '../../cluster/local/spark-builds.js';
import { admittedLocalPod, confValues } from '../helpers/local-driver-pod.js';
import { realSpark } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const admittedPod = (mainClass: string, engineConf: Record<string, string>) => admittedLocalPod('c', { type: 'Scala', mainClass, mainApplicationFile: 'spark-internal', arguments: [], engineConf });

const token = 'a'.repeat(64);
const machine = { sparkSubmit: '/venv/bin/spark-submit', workDir: '/tmp/w', connectToken: token, connectGate: '/cache/connect-gate-x/connect-gate.jar' };
const all = (options: string[], name: string) => confValues(options).filter((c) => c.startsWith(`${name}=`)).map((c) => c.slice(name.length + 1));

t.test('a Connect server driver gets the gate: its jar first in spark.jars, its class last among the interceptors, the pod\'s own kept', async (t) => {
  const pod = admittedPod(CONNECT_SERVER_CLASS, { 'spark.jars': '/c/spark-connect_2.12-3.5.7.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.Audit' });
  t.equal(driverMainClass(pod), CONNECT_SERVER_CLASS);
  const parts = localSubmitParts(pod, machine, 1);
  t.same(all(parts.options, 'spark.jars'), ['/cache/connect-gate-x/connect-gate.jar,/c/spark-connect_2.12-3.5.7.jar'], 'one spark.jars line: ours, then the server\'s');
  t.same(all(parts.options, CONNECT_INTERCEPTORS_CONF), [`com.example.Audit,${CONNECT_GATE_CLASS}`], 'one interceptors line, the gate last (run first)');
  t.equal(parts.env[CONNECT_SERVER_TOKEN_ENV], token, 'the token in the environment');
  t.notOk(parts.options.some((o) => o.includes(token)), 'never on the command line');

  const plain = localSubmitParts(admittedPod(CONNECT_SERVER_CLASS, {}), machine, 1);
  t.same(all(plain.options, 'spark.jars'), ['/cache/connect-gate-x/connect-gate.jar']);
  t.same(all(plain.options, CONNECT_INTERCEPTORS_CONF), [CONNECT_GATE_CLASS]);
});

t.test('other drivers, and a Connect server without a gate (Spark 4), get none', async (t) => {
  const other = localSubmitParts(admittedPod('com.example.Main', { 'spark.jars': '/srv/app.jar' }), machine, 1);
  t.same(all(other.options, 'spark.jars'), ['/srv/app.jar']);
  t.same(all(other.options, CONNECT_INTERCEPTORS_CONF), []);
  t.equal(other.env[CONNECT_SERVER_TOKEN_ENV], undefined);
  const four = localSubmitParts(admittedPod(CONNECT_SERVER_CLASS, {}), { ...machine, connectGate: undefined }, 1);
  t.same(all(four.options, CONNECT_INTERCEPTORS_CONF), []);
  t.equal(four.env[CONNECT_SERVER_TOKEN_ENV], token, 'Spark 4 checks the token itself');
});

/** A stand-in Spark home whose jars name `version` (empty files: only their names are read). */
function sparkHome(dir: string, version: string | undefined): { sparkSubmit: string } {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  mkdirSync(join(dir, 'jars'));
  writeFileSync(join(dir, 'bin', 'spark-submit'), '');
  if (version) writeFileSync(join(dir, 'jars', `spark-core_2.12-${version}.jar`), '');
  return { sparkSubmit: join(dir, 'bin', 'spark-submit') };
}

t.test('the gate is built for 3.x Connect servers only, against the fetched server jar, once per Spark; none to build against: the driver does not start', async (t) => {
  const dir = tempDir(t);
  const [three, four, none] = [sparkHome(join(dir, 'three'), '3.5.7'), sparkHome(join(dir, 'four'), '4.2.0'), sparkHome(join(dir, 'none'), undefined)];
  const built: string[] = [];
  let fetched: string | undefined;
  const gates = new ConnectGates({ serverJar: () => fetched, build: async (serverJar, version) => { built.push(`${serverJar} ${version}`); return '/cache/connect-gate-x/connect-gate.jar'; } });
  t.equal(await gates.forRun(three, 'com.example.Main'), undefined, 'not a Connect server: none');
  await t.rejects(gates.forRun(three, CONNECT_SERVER_CLASS), /runs only behind the service's gate.*spark-connect_2\.12-3\.5\.7\.jar/, 'no fetched jar: refused, saying what is missing');
  fetched = '/c/spark-connect_2.12-3.5.7.jar';
  t.equal(await gates.forRun(three, CONNECT_SERVER_CLASS), '/cache/connect-gate-x/connect-gate.jar', 'tried again after the failure');
  await gates.forRun(three, CONNECT_SERVER_CLASS);
  t.same(built, ['/c/spark-connect_2.12-3.5.7.jar 3.5.7'], 'built once, against the fetched jar, for that version');
  t.equal(await gates.forRun(four, CONNECT_SERVER_CLASS), undefined, 'Spark 4: its own token check');
  t.equal(await gates.forRun(none, CONNECT_SERVER_CLASS), undefined, 'a stand-in for spark-submit with no Spark beside it: none');
  t.equal(built.length, 1);
});

const spark = realSpark();
const serverJar = connectServerJar('3.5.7');
t.test('the one compile helper builds the Connect gate against the 3.5.7 server jar and the UI gate against Spark\'s jars, each once', { skip: !spark || !serverJar ? 'needs the Spark virtualenv and the 3.5 Connect server jar (scripts/setup.sh)' : false }, async (t) => {
  process.env.SUBMISSION_SERVICE_CACHE = tempDir(t);
  t.teardown(() => { delete process.env.SUBMISSION_SERVICE_CACHE; });
  const jar = await buildConnectGate(serverJar!, '3.5.7');
  t.match(jar, /connect-gate-[0-9a-f]{12}\/connect-gate\.jar$/);
  t.ok(existsSync(join(jar, '..', 'classes', 'submissionservice', 'ConnectGate.class')), 'compiled against the server\'s shaded gRPC');
  t.equal(await buildConnectGate(serverJar!, '3.5.7'), jar, 'kept: the same jar again');
  const ui = gateClasses(await buildUiGate(await sparkJars(spark!.sparkSubmit, spark!.python)));
  t.ok(existsSync(join(ui, 'submissionservice', 'ServiceGate.class')), 'the UI gate too');
});
