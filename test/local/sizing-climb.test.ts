// Sizing from past runs, the under-sized side, end to end in local mode with real Spark: a job
// asking 1g per executor whose tasks need 2000 MiB (test/fixtures/history/needs-memory.py, a
// TEST DOUBLE of an executor out of memory: local executors share the driver's JVM) fails from
// memory; under sizing.fromHistory=apply each failure gives the next run 1.5× the memory it
// failed with, until a run completes, and the runs after it keep that size. Within the pools.
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const skip = realSpark() ? false : 'no Spark virtualenv (scripts/setup.sh makes one)';
const program = `local://${join(repoRoot, 'test', 'fixtures', 'history', 'needs-memory.py')}`;
/** The largest pool of the example cluster holds at most this much Spark memory per executor. */
const LARGEST_POOL_MIB = 16348;

interface App { appName: string; state: string; cost?: unknown; config: { executor: { cores: number; memory: string; instances: number } } }

t.test('an under-sized job under apply climbs run by run until it completes, and stays there', { skip }, async (t) => {
  const service = await startService(t, { dataDir: tempDir(t), args: ['--cores', '2'] });
  const read = async (appName: string) => (await http(service.url, 'GET', `/api/apps/${appName}`)).json as App;
  const runOnce = async (expected: 'FAILED' | 'COMPLETED') => {
    const res = await http(service.url, 'POST', '/api/apps/', {
      jobName: 'undersized',
      configOverrides: { type: 'Python', mainApplicationFile: program, arguments: ['2000'], executor: { cores: 1, memory: '1g', instances: 1 }, sizing: { fromHistory: 'apply' } },
    });
    t.equal(res.status, 201, res.text);
    const appName = res.json.appName as string;
    await waitForState(() => read(appName), expected, { timeoutMs: 300_000 });
    // The next run is admitted from this one's profile: wait until the service recorded it.
    await until(async () => (await read(appName)).cost !== undefined, { timeoutMs: 120_000, what: `the profile of ${appName}` });
    return read(appName);
  };
  const mib = (app: App) => Number.parseInt(app.config.executor.memory, 10) * (app.config.executor.memory.endsWith('g') ? 1024 : 1);
  const first = await runOnce('FAILED');
  t.equal(first.config.executor.memory, '1g', 'the first run runs as asked, and fails from memory');
  const second = await runOnce('FAILED');
  t.equal(second.config.executor.memory, '1536m', 'the second gets 1.5× and fails again');
  const third = await runOnce('COMPLETED');
  t.equal(third.config.executor.memory, '2304m', 'the third gets 1.5× that and completes');
  const fourth = await runOnce('COMPLETED');
  t.ok(mib(fourth) >= 2304, `the next run keeps what fitted (${fourth.config.executor.memory}), not the 1g asked`);
  for (const app of [first, second, third, fourth]) {
    t.ok(mib(app) <= LARGEST_POOL_MIB, `${app.appName}: within the pools`);
    t.equal(app.config.executor.cores, 1, `${app.appName}: cores as asked`);
  }
  const submission = await http(service.url, 'GET', `/api/apps/${third.appName}/submission`);
  t.match(submission.json.sizing.history, { mode: 'apply', applied: true, asked: { memory: '1g' } }, 'the sizing annotation says it was applied');
  t.match(submission.json.sizing.history.reasons.join(' '), /failed from memory with 1536m/, 'and why');
});
