// A big run's history is replayed into Spark's History Server as soon as the run ended, not at
// its first open (cluster/history/warm.ts). With real Spark and its real History Server: a run
// whose event log is over the warming size ends, and the service's replay metric counts its
// replay with nobody having opened its UI; then its UI opens through the link. A small run's
// log is left for its first open (no History Server started for it).
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { HistoryWarmer, WARM_BYTES } from '../../cluster/history/warm.js';
import { sample } from '../helpers/metrics.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const skip = realSpark() ? false : 'no Spark virtualenv (scripts/setup.sh makes one)';
const REPLAYS = 'submission_service_history_replay_seconds_count';

t.test('a small log is not warmed: no History Server is asked for it', async (t) => {
  const asked: string[] = [];
  const warmer = new HistoryWarmer({ server: async () => { asked.push('server'); throw new Error('not to be asked'); }, log: (m) => asked.push(m) });
  t.teardown(() => warmer.close());
  t.equal(warmer.warm('small-1', { sparkAppId: 'local-1', entry: 'eventlog_v2_local-1', completed: true, bytes: WARM_BYTES - 1, modifiedMs: Date.now() }), false);
  t.equal(warmer.warm('gone-1', undefined), false, 'nor a run not found');
  await warmer.idle();
  t.same(asked, []);
});

t.test('a big run is replayed into the History Server when it ends, before anyone opens it', { skip }, async (t) => {
  const dataDir = tempDir(t);
  const jobs = tempDir(t); // not in the data dir: local mode refuses main files there
  // 600 tasks in the JVM: each task's start and end events make the log well over WARM_BYTES.
  const wide = join(jobs, 'wide.py');
  writeFileSync(wide, "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().range(0, 600, 1, 600).selectExpr('sum(id)').collect()\n");
  const { url } = await startService(t, { dataDir, args: ['--cores', '2'] });
  const replays = async () => sample((await http(url, 'GET', '/metrics')).text, REPLAYS, { outcome: 'ok' });
  t.equal(await replays(), 0, 'nothing replayed yet');

  const res = await http(url, 'POST', '/api/apps/', { jobName: 'wide', configOverrides: { type: 'Python', mainApplicationFile: `local://${wide}`, executor: { cores: 1, instances: 1 } } });
  if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${res.text}`);
  const appName = res.json.appName as string;
  await waitForState(() => http(url, 'GET', `/api/apps/${appName}`).then((r) => r.json as { state: string }), 'COMPLETED', { timeoutMs: 240_000 });
  const events = join(dataDir, 'spark-events');
  const [entry] = readdirSync(events).filter((e) => e.startsWith('eventlog_v2_'));
  const bytes = readdirSync(join(events, entry!)).reduce((sum, f) => sum + statSync(join(events, entry!, f)).size, 0);
  t.ok(bytes >= WARM_BYTES, `its event log (${bytes} bytes) is over the warming size`);

  // Nobody has asked for its UI: only the warming replays it.
  await until(async () => (await replays()) === 1, { timeoutMs: 180_000, intervalMs: 250, what: 'the run replayed into the History Server' });
  t.equal(sample((await http(url, 'GET', '/metrics')).text, REPLAYS, { outcome: 'failed' }), 0, 'no replay failed');

  const page = await http(url, 'GET', `/dashboard/apps/${appName}/spark-ui/jobs/`);
  t.equal(page.status, 200, 'its jobs page opens through the link');
  t.match(page.text, /Completed Jobs/, 'from the history');
});
