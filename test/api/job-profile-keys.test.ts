// Sizing from past runs is per key (cluster/job-profiles.ts; docs/security.md): in local mode
// with the TEST DOUBLE spark-submit, the profile recorder the CLI wires (cluster/profile-recorder.ts)
// records each ended run with an event-log profile chosen by the test (a real run's, from
// test/fixtures/history, or a tiny one). Key B's five tiny runs of key A's job name neither
// resize A's next run under sizing.fromHistory=apply nor show in A's recommendation.
import { join } from 'node:path';
import t from 'tap';
import { readRunProfile } from '../../cluster/history/run-profile-reader.js';
import { ProfileRecorder } from '../../cluster/profile-recorder.js';
import type { RunProfile } from '../../domain/index.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { exampleCluster, repoRoot, startTestApi, type TestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { buildRules } from '../../domain/index.js';

const overrides = { ...fakeJob({}), executor: { cores: 4, memory: '8g', instances: 2 }, sizing: { fromHistory: 'apply' } };
interface Size { cores: number; memory: string; instances: number }

/** Submits one run of `nightly` as `key`, lets it end, and waits until the recorder kept it with `profile`. */
async function recordedRun(api: TestApi, profiles: Map<string, RunProfile>, key: string, profile: RunProfile): Promise<string> {
  const headers = { 'x-api-key': key };
  const res = await api.call('POST', '/api/apps/', { jobName: 'nightly', configOverrides: overrides }, headers);
  if (res.status !== 201) throw new Error(`${res.status} ${res.body}`);
  const appName = res.json.appName as string;
  profiles.set(appName, profile);
  await waitForState(async () => (await api.call('GET', `/api/apps/${appName}`, undefined, headers)).json as { state: string }, 'COMPLETED');
  await until(() => api.cluster.jobs.costOf(appName) !== undefined, { what: `${appName} recorded` });
  return appName;
}

/** The executor size `key`'s next run of `nightly` is admitted at (a dry run: admission's answer, nothing made). */
async function nextSize(api: TestApi, key: string): Promise<Size> {
  const res = await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'nightly', configOverrides: overrides }, { 'x-api-key': key });
  if (res.status !== 200) throw new Error(`${res.status} ${res.body}`);
  const { cores, memory, instances } = res.json.config.executor as Size;
  return { cores, memory, instances };
}

t.test('key B\'s runs of key A\'s job name neither resize A\'s runs nor show in A\'s recommendation', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const api = await startTestApi(t, { auth: { enabled: true, store: keys } });
  const [a, b, admin] = [keys.create('user', 'alice'), keys.create('user', 'mallory'), keys.create('admin', 'ops')];
  const real = await readRunProfile(join(repoRoot, 'test', 'fixtures', 'history', 'event-logs'), 'eventlog_v2_local-1795819889599');
  // One task at a time on a small heap: what would shrink a job to 1 core and 512m.
  const tiny: RunProfile = { ...real, peakTasksPerExecutor: 1, peakTasks: 1, peakJvmHeapBytes: 64 * 2 ** 20, peakJvmOffHeapBytes: 0, peakProcessRssBytes: 0 };
  const profiles = new Map<string, RunProfile>();
  const recorder = new ProfileRecorder({
    cluster: api.cluster, profiles: api.cluster.jobs, rules: buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local' }),
    readProfile: async (appName) => profiles.get(appName) ?? null,
    warn: (message, { err }) => t.fail(`${message}: ${String(err)}`),
  });
  t.teardown(() => recorder.close());

  const own = [await recordedRun(api, profiles, a.key, real), await recordedRun(api, profiles, a.key, real)];
  const before = await nextSize(api, a.key);
  t.not(before.cores, 4, `A's own runs resize its next run (${JSON.stringify(before)})`);
  const poison: string[] = [];
  for (let i = 0; i < 5; i++) poison.push(await recordedRun(api, profiles, b.key, tiny));
  t.not((await nextSize(api, b.key)).cores, before.cores, 'B\'s runs size B\'s next run');

  t.same(await nextSize(api, a.key), before, 'A\'s next run is sized from A\'s runs only, after B\'s five');
  const mine = await api.call('GET', '/api/jobs/nightly/recommendation', undefined, { 'x-api-key': a.key });
  t.equal(mine.status, 200);
  t.equal(mine.json.submittedBy, a.id);
  t.same(mine.json.recommendation.basedOn, own, 'A\'s recommendation is based on A\'s runs');
  t.same(mine.json.recommendation.evidence.map((e: { appName: string }) => e.appName), own, 'its evidence names no run of B');
  t.same(mine.json.runs.map((r: { appName: string }) => r.appName), own, 'nor do its runs');
  t.notMatch(mine.body, new RegExp(poison.join('|')), 'no name of B\'s runs anywhere in A\'s answer');
  const asB = await api.call('GET', `/api/jobs/nightly/recommendation?submittedBy=${a.id}`, undefined, { 'x-api-key': b.key });
  t.equal(asB.status, 403, 'a user key cannot ask for another key\'s runs');
  const theirs = await api.call('GET', '/api/jobs/nightly/recommendation', undefined, { 'x-api-key': b.key });
  t.same(theirs.json.recommendation.basedOn, poison, 'B sees its own runs only');
  const byAdmin = await api.call('GET', `/api/jobs/nightly/recommendation?submittedBy=${a.id}`, undefined, { 'x-api-key': admin.key });
  t.same(byAdmin.json.recommendation.basedOn, own, 'an admin key sees any key\'s runs');
  const newest = await api.call('GET', '/api/jobs/nightly/recommendation', undefined, { 'x-api-key': admin.key });
  t.equal(newest.json.submittedBy, b.id, 'by default, the key of the job\'s newest run');
});
