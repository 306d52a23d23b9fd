// The Connect endpoint's warm pool with real clients and real Spark Connect servers:
// `submission-service local --auth on --connect-warm-pool default=1 --connect-warm-pool spark4=1`
// (3.5.7 for sessions naming no template, 4.2.0 for template spark4). A new session of key A is
// handed the ready server of its version, which becomes A's application (its submitter), answers
// the real client (pyspark[connect] 3.5.7, pyspark-client 4.2.0), is refused to key B's call with
// A's session id, and the pool starts another; A's session sees no trace of the warm-up the
// service ran on that server before (no table, temp view or global temp view). Heavy: four Spark drivers.
// A pooled server that passed its warm-up is counted ready in /metrics (connect_warm_pool_servers).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { listening } from '../../connect/placement.js';
import { connectClientPython, connectPortOf, createAdminKey, runConnectClientOf } from './connect-client.js';

const WARM = 'connect.submission-service.io/warm';
const CLAIMER = 'kernel.submission-service.io/claimed-by';
const skip = !realSpark() || !connectClientPython('3.5.7') || !connectClientPython('4.2.0')
  ? 'needs the Spark virtualenv and both Connect clients (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

interface App { appName: string; state: string; labels?: Record<string, string>; submittedBy?: string | null }

t.test('sessions from the warm pool: the caller\'s application at once, nobody else\'s, and the pool refills', { skip, timeout: 2_400_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const env = sparkEnv();
  const create = (label: string) => createAdminKey(t, dataDir, env, label);
  const [a, b] = [await create('A'), await create('B')];
  // Admin keys: local mode serves user keys only inside the driver sandbox, which is not what this covers.
  const service = await startService(t, {
    dataDir, env,
    args: ['--auth', 'on', '--sandbox', 'off', '--cores', '4', '--connect-port', '0', '--connect-warm-pool', 'default=1', '--connect-warm-pool', 'spark4=1'],
  });
  const made = await http(service.url, 'POST', '/api/config-templates/', { name: 'spark4', config: { engineVersion: '4.2.0' } }, { 'x-api-key': a.key });
  t.equal(made.status, 201, made.text);
  const port = connectPortOf(service.output());
  const apps = async () => (await http(service.url, 'GET', '/api/apps/', undefined, { 'x-api-key': a.key })).json.items as App[];
  const pooled = async (template: string) => (await apps()).filter((x) => x.labels?.[WARM] === template && !x.submittedBy && x.state === 'RUNNING');
  /** How many of `template`'s pooled servers have passed their warm-up (the service's /metrics). */
  const readyCount = async (template: string) => {
    const text = (await http(service.url, 'GET', '/metrics')).text;
    const line = text.split('\n').find((l) => l.startsWith(`submission_service_connect_warm_pool_servers{template="${template}",state="ready"}`));
    return Number(line?.split(' ').pop() ?? 0);
  };
  /** The pool's one server of `template`, once it is ready (a pool of one: the only unclaimed one running). */
  const readyServer = async (template: string): Promise<App> => {
    let found: App | undefined;
    await until(async () => {
      if (await readyCount(template) < 1) return false;
      found = (await pooled(template))[0];
      return found !== undefined;
    }, { what: `a ready warm server of ${template}`, timeoutMs: 900_000, intervalMs: 1000 });
    return found!;
  };

  const cases = [
    { version: '3.5.7', template: 'none', url: (key: string, session: string) => `sc://localhost:${port}/;x-api-key=${key};session_id=${session}` },
    { version: '4.2.0', template: 'spark4', url: (key: string, session: string) => `sc://localhost:${port}/;token=${key};template=spark4;session_id=${session}` },
  ];
  for (const { version, template, url } of cases) {
    await t.test(`Spark ${version}: a new session gets the ready server`, async (t) => {
      const warm = await readyServer(template);
      const session = randomUUID();
      const seen = await runConnectClientOf(version, 'count', url(a.key, session));
      t.equal(seen.count, 10, 'the query answered');
      t.equal(seen.version, version, `from a ${version} server`);
      t.equal(seen.session, session, 'in the client\'s session');
      const now = (await apps()).find((x) => x.appName === warm.appName);
      t.equal(now?.submittedBy, a.id, 'the warm server is now A\'s application (its submitter)');
      t.equal(now?.labels?.[CLAIMER], a.id, 'claimed by A');
      t.equal(now?.state, 'RUNNING');
      // The label is written beside the session's first call, not before it (connect/warm-handout.ts): waited for.
      const named = async () => (await apps()).filter((x) => x.labels?.['connect.submission-service.io/session'] === session).map((x) => x.appName);
      await until(async () => (await named()).length > 0, { what: 'the session label on the warm server', timeoutMs: 60_000, intervalMs: 200 });
      t.same(await named(), [warm.appName], 'no application was submitted for the session: the warm one now names it (its session label)');
      const traces = await runConnectClientOf(version, 'traces', url(a.key, session));
      t.same(traces, { tables: [], views: [], globalViews: [] }, 'the warm-up left nothing A\'s session can see: no table, temp view or global temp view');

      const before = (await apps()).map((x) => [x.appName, x.state, x.submittedBy]);
      const stolen = await runConnectClientOf(version, 'status', url(b.key, session));
      t.equal(stolen.status, 'PERMISSION_DENIED', 'key B naming A\'s session id is refused');
      t.match(stolen.message, /another API key/);
      t.same((await apps()).map((x) => [x.appName, x.state, x.submittedBy]).filter(([name]) => before.some(([seen]) => seen === name)), before, 'nothing changed hands or stopped');
      const again = await runConnectClientOf(version, 'count', url(a.key, session));
      t.equal(again.count, 10, 'A\'s next client on the same session reaches the same server');

      // Submitted at once (it may wait in local mode's core queue for a while before it runs).
      const refill = async () => (await apps()).filter((x) => x.labels?.[WARM] === template && !x.submittedBy && ['PENDING', 'RUNNING'].includes(x.state));
      await until(async () => (await refill()).some((x) => x.appName !== warm.appName), { what: `the pool of ${template} to start another server`, timeoutMs: 120_000, intervalMs: 500 });
      t.pass('the pool submitted another server, nobody\'s');
      // Its cores back before the next version's servers (local mode's core queue).
      const stopped = await http(service.url, 'POST', `/api/apps/${warm.appName}/stop`, undefined, { 'x-api-key': a.key });
      t.equal(stopped.status, 200, 'A stops its session\'s application through the API');
    });
  }

  await t.test('stopping the service stops the pool\'s servers too: none is left running', async (t) => {
    const warm = (await apps()).filter((x) => x.labels?.[WARM] !== undefined && !x.submittedBy && x.state !== 'KILLED');
    t.ok(warm.length > 0, 'the pool holds servers');
    const ports: number[] = [];
    for (const app of warm) {
      const submission = (await http(service.url, 'GET', `/api/apps/${app.appName}/submission`, undefined, { 'x-api-key': a.key })).json;
      ports.push(Number(submission.configOverrides.engineConf['spark.connect.grpc.binding.port']));
    }
    await service.stop();
    await until(async () => !(await Promise.all(ports.map((p) => listening({ host: '127.0.0.1', port: p }, 1000)))).some(Boolean), { what: 'the pool\'s servers to be gone', timeoutMs: 120_000, intervalMs: 500 });
    t.pass(`nothing listens on the pool's ports (${ports.join(', ')})`);
  });
});
