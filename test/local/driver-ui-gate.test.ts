// The gate on a sandboxed driver's Spark UI as spark-submit gets it (cluster/local/spark-command.ts):
// first among the UI's filters and on the class path whatever the pod says, the pod's own kept
// after ours, the secret in the environment and never on the command line. The gate at work
// against a real driver: test/security/ui-isolation.test.ts.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { localSubmitParts } from '../../cluster/local/spark-command.js';
import { UI_GATE_CLASS, UI_GATE_ENV } from '../../cluster/local/ui-gate.js';
import { DriverUiGates } from '../../cluster/local/driver-ui-gate.js';
import { admittedLocalPod, confValues } from '../helpers/local-driver-pod.js';
import { tempDir } from '../helpers/temp.js';

const admittedPod = (engineConf: Record<string, string>) => admittedLocalPod('g', { type: 'Python', mainApplicationFile: 'local:///srv/main.py', engineConf });

const secret = 'f'.repeat(64);
const machine = { sparkSubmit: '/venv/bin/spark-submit', workDir: '/tmp/w', uiPort: 4555, uiGate: { classes: '/cache/ui-gate/classes', secret } };
/** The value the driver ends with: spark-submit's last --conf of a name wins. */
const last = (options: string[], name: string) => confValues(options).filter((c) => c.startsWith(`${name}=`)).at(-1)?.slice(name.length + 1);

t.test('the gate comes last on the command line (so it wins) and first among filters, the pod\'s own kept after it', async (t) => {
  const plain = localSubmitParts(admittedPod({}), machine, 1);
  t.equal(last(plain.options, 'spark.ui.filters'), UI_GATE_CLASS);
  t.equal(last(plain.options, 'spark.driver.extraClassPath'), '/cache/ui-gate/classes');
  t.equal(plain.env[UI_GATE_ENV], secret, 'the secret in the environment');
  t.notOk(plain.options.some((o) => o.includes(secret)), 'never on the command line');

  const own = localSubmitParts(admittedPod({ 'spark.ui.filters': 'com.example.Audit', 'spark.driver.extraClassPath': '/srv/audit.jar' }), machine, 1);
  t.equal(last(own.options, 'spark.ui.filters'), `${UI_GATE_CLASS},com.example.Audit`, 'a pod\'s own filter runs after the gate');
  t.equal(last(own.options, 'spark.driver.extraClassPath'), '/cache/ui-gate/classes:/srv/audit.jar');
  t.equal(confValues(own.options).filter((c) => c.startsWith('spark.ui.filters=')).length, 1, 'one filters line: the pod cannot add one that drops the gate');
});

t.test('no gate asked: the command is as before', async (t) => {
  const parts = localSubmitParts(admittedPod({}), { ...machine, uiGate: undefined }, 1);
  t.equal(last(parts.options, 'spark.ui.filters'), undefined);
  t.equal(parts.env[UI_GATE_ENV], undefined);
});

t.test('the filter is compiled once per Spark, each run gets a secret of its own, a failed build is tried again', async (t) => {
  const home = tempDir(t);
  mkdirSync(join(home, 'bin'));
  mkdirSync(join(home, 'jars'));
  writeFileSync(join(home, 'bin', 'spark-submit'), '');
  const spark = { sparkSubmit: join(home, 'bin', 'spark-submit') };
  const sandbox = { bwrap: '/usr/bin/bwrap', hidden: [], readable: ['/venv'], dataDir: '/data' };
  const built: string[] = [];
  let fail = true;
  const gates = new DriverUiGates(async (jars) => { built.push(jars); if (fail) throw new Error('no javac'); return '/cache/ui-gate-x'; });
  await t.rejects(gates.forRun(spark, sandbox), /no javac/, 'a build that fails refuses the run (a Spark never runs ungated)');
  fail = false;
  const first = (await gates.forRun(spark, sandbox))!;
  const second = (await gates.forRun(spark, sandbox))!;
  t.same(built, [join(home, 'jars'), join(home, 'jars')], 'built against that Spark\'s jars, again after the failure, then kept');
  t.equal(first.uiGate.classes, '/cache/ui-gate-x/classes');
  t.not(first.uiGate.secret, second.uiGate.secret, 'each run has a secret of its own');
  t.match(first.uiGate.secret, /^[0-9a-f]{64}$/);
  t.same(first.sandbox.readable, ['/venv', '/cache/ui-gate-x/classes'], 'the classes readable inside the sandbox');
  t.same(sandbox.readable, ['/venv'], 'the service\'s sandbox itself unchanged');
  const noSpark = await gates.forRun({ sparkSubmit: join(home, 'nowhere', 'bin', 'spark-submit') }, sandbox);
  t.equal(noSpark, undefined, 'a stand-in for spark-submit with no Spark jars beside it gets no gate (it serves no Spark UI)');
});
