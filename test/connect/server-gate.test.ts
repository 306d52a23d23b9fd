// A session's own Connect server answers the endpoint alone (issue #25): local mode's Spark 4
// server listens on loopback only and refuses every call without its secret, which only the
// endpoint holds and sends. Another local process (here a plain pyspark-client 4.2.0) that finds
// the server's port gets UNAUTHENTICATED, with no token or a wrong one, while the session keeps
// working through the endpoint. Heavy: one Spark 4 driver.
import { randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { listening } from '../../connect/placement.js';
import { connectClientPython, connectPortOf, createAdminKey, runConnectClientOf } from './connect-client.js';

const skip = !realSpark() || !connectClientPython('4.2.0') ? 'needs the Spark virtualenv and the 4.2 Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

/** This machine's first non-loopback IPv4 address, if it has one. */
const outsideAddress = (): string | undefined =>
  Object.values(networkInterfaces()).flat().find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

interface App { appName: string; labels?: Record<string, string>; config?: { engineConf?: Record<string, string> } }

t.test('a Spark 4 session\'s server refuses every caller but the endpoint, and listens on loopback only', { skip, timeout: 1_800_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const env = { ...sparkEnv(), LOG_LEVEL: 'warn' };
  const [a, b] = [await createAdminKey(t, dataDir, env, 'A'), await createAdminKey(t, dataDir, env, 'B')];
  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--sandbox', 'off', '--cores', '2', '--connect-port', '0'] });
  const made = await http(service.url, 'POST', '/api/config-templates/', { name: 'spark4', config: { engineVersion: '4.2.0' } }, { 'x-api-key': a.key });
  t.equal(made.status, 201, made.text);
  const session = randomUUID();
  const viaEndpoint = `sc://localhost:${connectPortOf(service.output())}/;token=${a.key};template=spark4;session_id=${session}`;

  const first = await runConnectClientOf('4.2.0', 'count', viaEndpoint);
  t.equal(first.count, 10, 'the session answers through the endpoint');
  const items = (await http(service.url, 'GET', '/api/apps/', undefined, { 'x-api-key': a.key })).json.items as App[];
  const app = items.find((x) => x.labels?.['connect.submission-service.io/session'] === session);
  const port = Number(app?.config?.engineConf?.['spark.connect.grpc.binding.port']);
  t.ok(port > 0, `the session's server port (${app?.appName})`);

  for (const [what, token] of [['no token', undefined], ['a wrong token', 'not-the-secret'], ['the owner\'s API key', a.key]] as const) {
    const direct = await runConnectClientOf('4.2.0', 'status', `sc://localhost:${port}/${token ? `;token=${token}` : ''};session_id=${session}`);
    t.equal(direct.status, 'UNAUTHENTICATED', `straight to the server with ${what}: ${direct.message ?? direct.status}`);
  }
  const outside = outsideAddress();
  if (outside) t.notOk(await listening({ host: outside, port }, 3000), `nothing listens on ${outside}:${port} (only loopback)`);
  else t.comment('no non-loopback address on this machine: the binding is checked by the logic test only');

  const seenByOther = (await http(service.url, 'GET', `/api/apps/${app!.appName}`, undefined, { 'x-api-key': b.key })).json as App;
  t.notOk(/authenticate|SPARK_CONNECT_AUTHENTICATE_TOKEN/i.test(JSON.stringify(seenByOther.config)), 'the application\'s config, which every key reads, names no secret');

  const again = await runConnectClientOf('4.2.0', 'count', viaEndpoint);
  t.equal(again.count, 10, 'the session still answers through the endpoint');
  t.equal(again.session, session);
});
