// Sizing from past runs, end to end in local mode with real Spark: an over-sized recurring job
// (4 cores and 8g per executor, running one task at a time) under sizing.fromHistory=apply.
// Each run's event log is read into its job's profile once it ended; from the third run on,
// admission sizes the executor from the first runs, and the cores each run holds (driver plus
// executors, what the requested core-hours are made of per second) drop by half or more while the
// run still completes. The core-hours themselves also weigh how long each pod lived, which the
// machine's load decides (a loaded machine stretches the driver's start more than the executor's
// life): they are reported in the comments, not asserted.
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const skip = realSpark() ? false : 'no Spark virtualenv (scripts/setup.sh makes one)';
const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;
const RUNS = 4;

interface Cost { requestedCoreHours: number; requestedGibHours: number; usedCoreHours: number | null; usedGibHours: number | null }
interface App { appName: string; state: string; startedAt: string | null; endedAt: string | null; cost?: Cost; config: { driver: { cores: number }; executor: { cores: number; memory: string; instances: number } } }

t.test('an over-sized recurring job under apply: requested core-hours drop by half, runs still complete', { skip }, async (t) => {
  const service = await startService(t, { dataDir: tempDir(t), args: ['--cores', '2'] });
  const read = async (appName: string) => (await http(service.url, 'GET', `/api/apps/${appName}`)).json as App;
  const runs: App[] = [];
  for (let i = 0; i < RUNS; i++) {
    const res = await http(service.url, 'POST', '/api/apps/', {
      jobName: 'oversized',
      configOverrides: { type: 'Python', mainApplicationFile: pi, arguments: ['1'], executor: { cores: 4, memory: '8g', instances: 1 }, sizing: { fromHistory: 'apply' } },
    });
    t.equal(res.status, 201, `run ${i + 1} submitted`);
    const appName = res.json.appName as string;
    await waitForState(() => read(appName), 'COMPLETED', { timeoutMs: 300_000 });
    // The next run is admitted from this one's profile: wait until the service recorded it.
    await until(async () => (await read(appName)).cost !== undefined, { timeoutMs: 120_000, what: `the cost of run ${i + 1}` });
    runs.push(await read(appName));
  }
  const seconds = (app: App) => (Date.parse(app.endedAt!) - Date.parse(app.startedAt!)) / 1000;
  for (const [i, run] of runs.entries()) {
    t.comment(`run ${i + 1}: executor ${run.config.executor.cores} cores ${run.config.executor.memory}; ${seconds(run).toFixed(1)} s; cost ${JSON.stringify(run.cost)}`);
  }
  const [first, , third, fourth] = runs;
  t.equal(first.config.executor.cores, 4, 'the first runs run as asked');
  t.ok(first.cost!.usedCoreHours !== null && first.cost!.usedGibHours !== null, 'used figures come from the event log');
  const coresHeld = (app: App) => app.config.driver.cores + app.config.executor.cores * app.config.executor.instances;
  for (const [name, run] of [['third', third], ['fourth', fourth]] as const) {
    t.equal(run.state, 'COMPLETED', `the ${name} run completes at its new size`);
    t.ok(run.config.executor.cores < 4, `the ${name} run asks fewer cores (${run.config.executor.cores})`);
    t.ok(coresHeld(run) <= coresHeld(first) * 0.5, `the ${name} run holds at most half the cores of the first (${coresHeld(run)} vs ${coresHeld(first)})`);
    t.comment(`${name} run: ${run.cost!.requestedCoreHours} requested core-hours vs the first's ${first.cost!.requestedCoreHours}, in ${seconds(run).toFixed(1)} s vs ${seconds(first).toFixed(1)} s`);
  }
  const submission = await http(service.url, 'GET', `/api/apps/${fourth.appName}/submission`);
  t.match(submission.json.sizing.history, { mode: 'apply', applied: true, asked: { cores: 4, memory: '8g', instances: 1 } }, 'the sizing annotation says it was applied, and from what');
  t.ok(submission.json.sizing.history.basedOn.length >= 2, 'and names the runs it is based on');

  const recommendation = await http(service.url, 'GET', '/api/jobs/oversized/recommendation');
  t.equal(recommendation.status, 200);
  t.equal(recommendation.json.mode, 'apply');
  t.equal(recommendation.json.recommendation.current.cores, 4, 'compared with what the job asks');
  for (const figures of recommendation.json.recommendation.evidence) t.comment(`evidence: ${JSON.stringify(figures)}`);
  t.ok(recommendation.json.recommendation.saving.coreHoursPercent >= 50, `the saving: ${recommendation.json.recommendation.saving.coreHoursPercent}%`);
  t.equal(recommendation.json.runs.length, RUNS, 'every run with its cost, for the trend');
  t.equal((await http(service.url, 'GET', '/api/jobs/nobody/recommendation')).status, 404, 'an unknown job is not found');
});
