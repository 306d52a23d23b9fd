// A session's own Connect server answers the endpoint alone (issue #25). Local mode's Spark 4
// server listens on loopback only and refuses every call without its secret (Spark's own check);
// a Spark 3.5 server, which has no address setting and listens on every interface, refuses the
// same way through the service's gate (cluster/local/connect-gate.ts). Either way, another local
// process (here a plain pyspark-client 4.2.0) that finds the server's port gets UNAUTHENTICATED,
// with no token, a wrong one or the owner's API key, while the session keeps working through the
// endpoint. A 3.5 template's own jar and interceptor stay on its session's server, the gate
// running before that interceptor (domain/connect-gate.ts). Heavy: one Spark driver per test, two
// tests: the 3.5 server's refusals and its template's jar are one session's (a driver each cost a
// Connect server's JVM, about 23 s of CPU, and a service).
import { randomUUID } from 'node:crypto';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { listening } from '../../connect/placement.js';
import { CONNECT_INTERCEPTORS_CONF } from '../../domain/connect-gate.js';
import { buildJava } from '../../cluster/local/spark-builds.js';
import { connectClientPython, connectPortOf, createAdminKey, runConnectClientOf, serverTokenOf, serverTokenParam } from './connect-client.js';

const skip = !realSpark() || !connectClientPython('4.2.0') || !connectClientPython('3.5.7')
  ? 'needs the Spark virtualenv and the 3.5 and 4.2 Connect clients (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

/** This machine's first non-loopback IPv4 address, if it has one. */
const outsideAddress = (): string | undefined =>
  Object.values(networkInterfaces()).flat().find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

interface App { appName: string; labels?: Record<string, string>; config?: { engineConf?: Record<string, string> } }

/**
 * A service with two admin keys (A makes the session, B reads its application) and a session of
 * A's through the endpoint from a template of `version` and Spark properties `engineConf`,
 * answered by the client of `version`: the session's application and a call through the endpoint
 * to make again.
 */
async function sessionOf(t: Test, version: string, args: string[], engineConf: Record<string, string> = {}) {
  const dataDir = join(tempDir(t), 'data');
  const env = { ...sparkEnv(), LOG_LEVEL: 'warn' };
  const [a, b] = [await createAdminKey(t, dataDir, env, 'A'), await createAdminKey(t, dataDir, env, 'B')];
  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--cores', '2', '--connect-port', '0', ...args] });
  const made = await http(service.url, 'POST', '/api/config-templates/', { name: 'gated', config: { engineVersion: version, engineConf } }, { 'x-api-key': a.key });
  t.equal(made.status, 201, made.text);
  const session = randomUUID();
  // pyspark 3.5 sends a token over TLS only: in plaintext on loopback its key goes as `;x-api-key=` metadata.
  const credential = Number(version.split('.')[0]) >= 4 ? `;token=${a.key}` : `;x-api-key=${a.key}`;
  const viaEndpoint = `sc://localhost:${connectPortOf(service.output())}/${credential};template=gated;session_id=${session}`;
  const count = () => runConnectClientOf(version, 'count', viaEndpoint);
  const first = await count();
  t.equal(first.count, 10, `the session answers through the endpoint: ${JSON.stringify(first)}`);
  t.equal(first.version, version, `a Spark ${version} server`);
  const items = (await http(service.url, 'GET', '/api/apps/', undefined, { 'x-api-key': a.key })).json.items as App[];
  const app = items.find((x) => x.labels?.['connect.submission-service.io/session'] === session);
  const port = Number(app?.config?.engineConf?.['spark.connect.grpc.binding.port']);
  t.ok(port > 0, `the session's server port (${app?.appName})`);
  const seenByOther = (await http(service.url, 'GET', `/api/apps/${app!.appName}`, undefined, { 'x-api-key': b.key })).json as App;
  t.notOk(/authenticate|SPARK_CONNECT_AUTHENTICATE_TOKEN/i.test(JSON.stringify(seenByOther.config)), 'the application\'s config, which every key reads, names no secret');
  return { session, port, ownerKey: a.key, count, url: viaEndpoint, app: app!, token: () => serverTokenOf(dataDir, app!.appName) };
}

/**
 * Straight to the server on loopback with no token, a wrong one and the owner's API key:
 * UNAUTHENTICATED each time; with the server's own token (what the endpoint sends), answered.
 */
async function directCalls(t: Test, version: string, served: Awaited<ReturnType<typeof sessionOf>>): Promise<void> {
  const { port, session, ownerKey } = served;
  const direct = (token?: string) => `sc://localhost:${port}/${token ? `;token=${token}` : ''};session_id=${session}`;
  // The three calls from one client process, a session of its own each: a process per call cost
  // three starts of the client (its imports), which is most of what a refused call costs.
  const seen = (await runConnectClientOf('4.2.0', 'statuses', direct(), direct('not-the-secret'), direct(ownerKey))).statuses as Array<{ status: string; message?: string }>;
  t.equal(seen.length, 3, 'an answer for each call');
  ['no token', 'a wrong token', 'the owner\'s API key'].forEach((what, i) => {
    t.equal(seen[i]?.status, 'UNAUTHENTICATED', `straight to the server with ${what}: ${seen[i]?.message ?? seen[i]?.status}`);
  });
  const right = await runConnectClientOf(version, 'status', `sc://localhost:${port}/${serverTokenParam(version, served.token())};session_id=${randomUUID()}`);
  t.equal(right.status, 'OK', `with the server's own token: ${right.message ?? right.status}`);
}

t.test('a Spark 4 session\'s server refuses every caller but the endpoint, and listens on loopback only', { skip, timeout: 1_800_000 }, async (t) => {
  const served = await sessionOf(t, '4.2.0', ['--sandbox', 'off']);
  const { session, port, count } = served;
  await directCalls(t, '4.2.0', served);
  const outside = outsideAddress();
  if (outside) t.notOk(await listening({ host: outside, port }, 3000), `nothing listens on ${outside}:${port} (only loopback)`);
  else t.comment('no non-loopback address on this machine: the binding is checked by the logic test only');
  const again = await count();
  t.equal(again.count, 10, 'the session still answers through the endpoint');
  t.equal(again.session, session);
});

/** A team's own interceptor and class (test/fixtures/connect-template), packed as a jar against Spark 3.5.7's Connect server. */
async function templateJar(): Promise<string> {
  const connectJars = sparkEnv().SUBMISSION_SERVICE_CONNECT_JARS;
  if (!connectJars) throw new Error('no SUBMISSION_SERVICE_CONNECT_JARS (scripts/setup.sh fetches the 3.5 Connect server\'s jar)');
  const source = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'connect-template', 'TemplateProbe.java'), 'utf8');
  const built = await buildJava({ name: 'template-probe', fileName: 'TemplateProbe.java', source, classpath: join(connectJars, 'spark-connect_2.12-3.5.7.jar'), version: '3.5.7', jar: true });
  return join(built, 'template-probe.jar');
}

/**
 * templateJar() in a folder of its own that a sandboxed driver can read: the sandbox shows a
 * driver nothing under /tmp or the home (sandbox.ts), where the build is cached; a team's own jar
 * is wherever its drivers can read it (an image, s3a://, a shared folder). Readable by all: a
 * service running as root runs its drivers as another user.
 */
async function readableJar(t: Test): Promise<string> {
  const dir = mkdtempSync(join('/var/tmp', 'subsvc-template-jar-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o755);
  const jar = join(dir, 'template-probe.jar');
  copyFileSync(await templateJar(), jar);
  chmodSync(jar, 0o644);
  return jar;
}

// In the driver sandbox (the default with auth on), as an operator runs it: the gate's jar is
// readable there, and so is the template's own.
t.test('a Spark 3.5 session\'s server, on every interface, refuses every caller but the endpoint; its template\'s own jar and interceptor stay, behind the gate', { skip, timeout: 1_800_000 }, async (t) => {
  const jar = await readableJar(t);
  const served = await sessionOf(t, '3.5.7', [], { 'spark.jars': jar, [CONNECT_INTERCEPTORS_CONF]: 'probe.TemplateProbe' });
  const { session, port, count } = served;
  const conf = served.app.config?.engineConf ?? {};
  t.match(conf['spark.jars'], /spark-connect_2\.12-3\.5\.7\.jar/, `the session's server jar: ${conf['spark.jars']}`);
  t.ok(conf['spark.jars']?.split(',').includes(jar), 'and the template\'s, not replaced by it');
  const loaded = await runConnectClientOf('3.5.7', 'sql', served.url, "select reflect('probe.TemplateProbe', 'marker')");
  t.equal(loaded.value, 'template-jar-loaded', `a class of the template's jar answers a query through the endpoint: ${JSON.stringify(loaded)}`);
  // Both probed calls from one client process, a session of its own each.
  const [unauthenticated, probed] = (await runConnectClientOf('3.5.7', 'statuses', `sc://localhost:${port}/;x-template-probe=refuse;session_id=${session}`,
    `sc://localhost:${port}/${serverTokenParam('3.5.7', served.token())};x-template-probe=refuse;session_id=${randomUUID()}`)).statuses as Array<{ status: string; message?: string }>;
  t.equal(unauthenticated?.status, 'UNAUTHENTICATED', `no token: the gate refuses first, the template's interceptor never sees the call: ${unauthenticated?.message}`);
  t.equal(probed?.status, 'PERMISSION_DENIED', 'past the gate, the template\'s interceptor runs');
  t.match(probed?.message, /refused by the template's own interceptor/);
  await directCalls(t, '3.5.7', served);
  const outside = outsideAddress();
  if (outside) {
    // Without a token the 3.5 client speaks plaintext to any host (4.2's insists on TLS beyond `localhost`).
    const direct = await runConnectClientOf('3.5.7', 'status', `sc://${outside}:${port}/;session_id=${session}`);
    t.equal(direct.status, 'UNAUTHENTICATED', `from ${outside}, where 3.5 listens too: ${direct.message ?? direct.status}`);
  } else t.comment('no non-loopback address on this machine');
  const again = await count();
  t.equal(again.count, 10, 'the session still answers through the endpoint');
  t.equal(again.session, session);
});
