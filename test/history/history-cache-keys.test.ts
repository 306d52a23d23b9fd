// The proxy's cache of history pages (dashboard/history-cache.ts) with two user keys, in local
// mode with `--auth on` (sandboxed drivers), real Spark and its History Server: A's big run
// ends, the warm-up replays it and puts its first pages in the cache; A's first open is answered
// from the cache, B's request for the very same page is refused before any lookup (the cache's
// counters do not move, nothing of the page in the answer), an admin reads it. Then the service
// restarts: with nobody opening anything, the run is warmed again (the replay metric of the new
// process), and A's next first open is a hit again.
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { sample } from '../helpers/metrics.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const spark = realSpark();
const hasBwrap = (process.env.PATH ?? '').split(delimiter).some((dir) => {
  try { accessSync(join(dir, 'bwrap'), constants.X_OK); return true; } catch { return false; }
});
const skip = !spark ? 'needs the Spark virtualenv' : !hasBwrap ? 'needs bubblewrap (bwrap)' : false;
const REPLAYS = 'submission_service_history_replay_seconds_count';
const LOOKUPS = 'submission_service_history_page_cache_requests_total';

t.test("B never reads A's cached history page; a restart warms A's run again", { skip, timeout: 600_000 }, async (t) => {
  // Outside /tmp (drivers get a /tmp of their own); the job file readable by the drivers' user.
  const root = mkdtempSync('/var/tmp/subsvc-history-cache-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, 'data');
  const jobs = join(root, 'jobs');
  mkdirSync(jobs);
  chmodSync(root, 0o755);
  chmodSync(jobs, 0o755);
  // 600 tasks in the JVM: the log is well over the warming size (1 MiB).
  const wide = join(jobs, 'wide.py');
  writeFileSync(wide, "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().range(0, 600, 1, 600).selectExpr('sum(id)').collect()\n", { mode: 0o644 });
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, bob: store.create('user', 'bob').key, admin: store.create('admin', 'platform').key };
  const args = ['--auth', 'on', '--cores', '2'];
  let service = await startService(t, { dataDir, env: sparkEnv(), args });
  const as = (key: string) => (path: string, headers: Record<string, string> = {}) => http(service.url, 'GET', path, undefined, { 'x-api-key': key, ...headers });
  const [alice, bob, admin] = [as(keys.alice), as(keys.bob), as(keys.admin)];
  const metrics = async () => (await admin('/metrics')).text;
  const counts = async () => {
    const text = await metrics();
    return { hit: sample(text, LOOKUPS, { outcome: 'hit' }), miss: sample(text, LOOKUPS, { outcome: 'miss' }), replays: sample(text, REPLAYS, { outcome: 'ok' }) };
  };

  const submitted = await http(service.url, 'POST', '/api/apps/', { jobName: 'wide', configOverrides: { type: 'Python', mainApplicationFile: `local://${wide}`, executor: { cores: 1, instances: 1 } } }, { 'x-api-key': keys.alice });
  t.equal(submitted.status, 201, submitted.status === 201 ? 'A submits a 600-task run' : submitted.text);
  const appName = submitted.json.appName as string;
  const state = await waitForState(async () => (await alice(`/api/apps/${appName}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 300_000 });
  t.equal(state.state, 'COMPLETED');
  // Counted once the replay and the page cache's fill are both done (cluster/history/warm.ts).
  await until(async () => (await counts()).replays === 1, { timeoutMs: 240_000, intervalMs: 250, what: 'the run warmed' });

  const page = `/dashboard/apps/${appName}/spark-ui/jobs/job/?id=0`;
  const gzip = { 'accept-encoding': 'gzip' };
  const before = await counts();
  const first = await alice(page, gzip);
  t.equal(first.status, 200, "A's first open of the job page");
  t.match(first.text, /Completed Stages/, 'the job page from the history');
  const afterA = await counts();
  t.equal(afterA.hit, before.hit + 1, 'answered from the cache the warm-up filled');
  t.equal(afterA.miss, before.miss, 'no miss');
  // The first stage the job page links to (as a browser reads the link: &amp; is &).
  const stageLink = /href="([^"]*\/stages\/stage\/\?id=\d+&amp;attempt=\d+)"/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
  t.ok(stageLink, `the job page links to a stage page (${stageLink})`);
  const stagePage = await alice(stageLink!.slice(stageLink!.indexOf('/dashboard/')), gzip);
  t.equal(stagePage.status, 200, "A's first open of that stage page");
  t.match(stagePage.text, /Details for Stage/, 'the stage page from the history');
  t.same(await counts(), { ...afterA, hit: afterA.hit + 1 }, 'answered from the cache the warm-up filled, no miss');
  // What the stage page's scripts ask for next (stagepage.js): its task summary, warmed too.
  const runId = /\/history\/([\w-]+)\//.exec(stageLink!)?.[1];
  const summary = await alice(`/dashboard/apps/${appName}/spark-ui/api/v1/applications/${runId}/stages/0/0/taskSummary?quantiles=0,0.25,0.5,0.75,1.0`, gzip);
  t.equal(summary.status, 200, 'the stage\'s task summary through the link');
  t.same(await counts(), { ...afterA, hit: afterA.hit + 2 }, 'from the cache too');

  for (const path of [page, `/dashboard/apps/${appName}/spark-ui/jobs/`, `/dashboard/apps/${appName}/spark-ui/`]) {
    const refused = await bob(path, gzip);
    t.equal(refused.status, 403, `B is refused ${path}`);
    t.notMatch(refused.text, /Completed|Stages|Jobs/, 'nothing of the page in the answer');
  }
  const anonymous = await http(service.url, 'GET', page, undefined, gzip);
  t.equal(anonymous.status, 401, 'without a key: refused');
  t.same(await counts(), { ...afterA, hit: afterA.hit + 2 }, "the cache was not even asked for B's or the anonymous requests");
  const byAdmin = await admin(page, gzip);
  t.equal(byAdmin.status, 200, 'an admin reads it');
  t.equal((await counts()).hit, afterA.hit + 3, 'from the cache too');
  // Spark's scripts on a live-style path (/stages/stage/) ask for the list of every run to learn their run's id.
  const list = await alice(`/dashboard/apps/${appName}/spark-ui/api/v1/applications`);
  t.equal(list.status, 200, 'the list of runs through the link');
  t.same((list.json as Array<{ id: string }>).map((run) => run.id), [first.text.match(/\/history\/([\w-]+)\//)?.[1]], 'holds its own run alone');
  t.equal((await bob(`/dashboard/apps/${appName}/spark-ui/api/v1/applications`)).status, 403, 'B is refused it');

  // A restart: nothing is opened, yet the new process warms the run again (and fills its cache).
  t.equal(await service.stop(), 0, 'the service stops');
  service = await startService(t, { dataDir, env: sparkEnv(), args });
  await until(async () => (await counts()).replays === 1, { timeoutMs: 240_000, intervalMs: 250, what: 'the run warmed again after the restart' });
  const again = await alice(page, gzip);
  t.equal(again.status, 200, "A's first open after the restart");
  t.match(again.text, /Completed Stages/);
  const { hit, miss } = await counts();
  t.same({ hit, miss }, { hit: 1, miss: 0 }, 'answered from the cache the re-warm filled');
});
