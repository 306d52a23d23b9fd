// A session's own Connect server answers the endpoint alone (issue #25). Local mode's Spark 4
// server listens on loopback only and refuses every call without its secret (Spark's own check);
// a Spark 3.5 server, which has no address setting and listens on every interface, refuses the
// same way through the service's gate (cluster/local/connect-gate.ts). Either way, another local
// process (here a plain pyspark-client 4.2.0) that finds the server's port gets UNAUTHENTICATED,
// with no token, a wrong one or the owner's API key, while the session keeps working through the
// endpoint. Heavy: one Spark driver per test.
import { randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { listening } from '../../connect/placement.js';
import { connectClientPython, connectPortOf, createAdminKey, runConnectClientOf, serverTokenOf, serverTokenParam } from './connect-client.js';

const skip = !realSpark() || !connectClientPython('4.2.0') || !connectClientPython('3.5.7')
  ? 'needs the Spark virtualenv and the 3.5 and 4.2 Connect clients (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

/** This machine's first non-loopback IPv4 address, if it has one. */
const outsideAddress = (): string | undefined =>
  Object.values(networkInterfaces()).flat().find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

interface App { appName: string; labels?: Record<string, string>; config?: { engineConf?: Record<string, string> } }

/**
 * A service with two admin keys (A makes the session, B reads its application) and a session of
 * A's through the endpoint, answered by the client of `version`: the session's application and
 * a call through the endpoint to make again.
 */
async function sessionOf(t: Test, version: string, args: string[]) {
  const dataDir = join(tempDir(t), 'data');
  const env = { ...sparkEnv(), LOG_LEVEL: 'warn' };
  const [a, b] = [await createAdminKey(t, dataDir, env, 'A'), await createAdminKey(t, dataDir, env, 'B')];
  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--cores', '2', '--connect-port', '0', ...args] });
  const made = await http(service.url, 'POST', '/api/config-templates/', { name: 'gated', config: { engineVersion: version } }, { 'x-api-key': a.key });
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
  return { session, port, ownerKey: a.key, count, token: () => serverTokenOf(dataDir, app!.appName) };
}

/**
 * Straight to the server on loopback with no token, a wrong one and the owner's API key:
 * UNAUTHENTICATED each time; with the server's own token (what the endpoint sends), answered.
 */
async function directCalls(t: Test, version: string, served: Awaited<ReturnType<typeof sessionOf>>): Promise<void> {
  const { port, session, ownerKey } = served;
  for (const [what, token] of [['no token', undefined], ['a wrong token', 'not-the-secret'], ['the owner\'s API key', ownerKey]] as const) {
    const direct = await runConnectClientOf('4.2.0', 'status', `sc://localhost:${port}/${token ? `;token=${token}` : ''};session_id=${session}`);
    t.equal(direct.status, 'UNAUTHENTICATED', `straight to the server with ${what}: ${direct.message ?? direct.status}`);
  }
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

// In the driver sandbox (the default with auth on), as an operator runs it: the gate's jar is readable there.
t.test('a Spark 3.5 session\'s server, on every interface, refuses every caller but the endpoint', { skip, timeout: 1_800_000 }, async (t) => {
  const served = await sessionOf(t, '3.5.7', []);
  const { session, port, count } = served;
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
