// A job's sizing and cost, over the API and on the dashboard: runs of the TEST DOUBLE
// spark-submit (test/helpers/fake-spark-submit.ts) recorded into a job profile with the figures
// of a real run's event log (test/fixtures/history), so the page has evidence to show. Costs in
// the app view; the recommendation owned like applications; the job page in headless Chromium
// with its uPlot chart. Screenshots go to $DASHBOARD_SCREENSHOTS (default <tmp>/submission-service-dashboard).
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runCost, type RunEvidence } from '../../domain/index.js';
import { readRunProfile } from '../../cluster/history/run-profile-reader.js';
import type { LocalJobProfiles } from '../../cluster/local/job-profiles.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { repoRoot, startTestApi, type TestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { launchChromium, openPage } from '../helpers/browser.js';

const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');

/** Runs `count` fake apps of `jobName` as `headers`' key, each recorded with the fixture's figures. */
async function recordedRuns(api: TestApi, jobs: LocalJobProfiles, jobName: string, count: number, headers?: Record<string, string>): Promise<string[]> {
  const profile = await readRunProfile(join(repoRoot, 'test', 'fixtures', 'history', 'event-logs'), 'eventlog_v2_local-1795819889599');
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.call('POST', '/api/apps/', { jobName, configOverrides: { ...fakeJob({}), executor: { cores: 4, memory: '8g', instances: 2 } } }, headers);
    if (res.status !== 201) throw new Error(`${res.status} ${res.body}`);
    const read = async () => (await api.call('GET', `/api/apps/${res.json.appName}`, undefined, headers)).json as { state: string; config: never; endedAt: string; submittedBy: string | null };
    const record = await waitForState(read, 'COMPLETED');
    const size = { cores: 4, memory: '8g', instances: 2 };
    const durationMs = profile.durationMs * (1 + i / 10);
    const run: RunEvidence = { appName: res.json.appName, state: 'COMPLETED', endedAt: record.endedAt, durationMs, asked: size, ran: size, profile: { ...profile, durationMs }, cost: runCost(record.config, durationMs, { ...profile, durationMs }, 0.4) };
    await jobs.record(jobName, record.submittedBy ?? null, record.config, run);
    names.push(run.appName);
  }
  return names;
}

t.test('cost in the app view; the recommendation is seen like the job\'s applications', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const api = await startTestApi(t, { auth: { enabled: true, store: keys } });
  const { jobs } = api.cluster;
  const [alice, bob, admin] = [keys.create('user', 'alice'), keys.create('user', 'bob'), keys.create('admin', 'ops')];
  const as = (who: { key: string }) => ({ 'x-api-key': who.key });
  const [first] = await recordedRuns(api, jobs, 'nightly', 2, as(alice));
  const app = await api.call('GET', `/api/apps/${first}`, undefined, as(alice));
  t.match(app.json.cost, { requestedCoreHours: Number, requestedGibHours: Number, usedCoreHours: Number, usedGibHours: Number }, 'the cost is in the app view');
  t.ok(app.json.cost.usedCoreHours < app.json.cost.requestedCoreHours, 'used below requested');
  const mine = await api.call('GET', '/api/jobs/nightly/recommendation', undefined, as(alice));
  t.equal(mine.status, 200);
  t.match(mine.json.recommendation, { current: { cores: 4, memory: '8g', instances: 2 }, suggested: { cores: 2, instances: 1 } }, 'from the runs\' figures (2 tasks at once)');
  t.equal(mine.json.runs.length, 2);
  t.equal((await api.call('GET', '/api/jobs/nightly/recommendation', undefined, as(bob))).status, 404, 'another user: as if the job did not exist');
  t.equal((await api.call('GET', '/api/jobs/nightly/recommendation', undefined, as(admin))).status, 200, 'an admin sees every job');
  t.equal((await api.call('GET', '/api/jobs/Not_A_Job!/recommendation', undefined, as(admin))).status, 404, 'no such job');
});

t.test('in Chromium: the job page shows the recommendation and the cost trend', async (t) => {
  mkdirSync(shots, { recursive: true });
  const api = await startTestApi(t);
  const { jobs } = api.cluster;
  const names = await recordedRuns(api, jobs, 'daily-etl', 5);
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const css = await api.call('GET', '/dashboard/static/uPlot.min.css');
  t.equal(css.status, 200, 'uPlot\'s files are served from the installed package');
  const browser = await launchChromium(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 1100 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.goto(`${address}/dashboard/apps/${names[4]}`);
  await page.locator('#job-page').click();
  await page.waitForURL('**/dashboard/jobs/daily-etl');
  await page.locator('#cost-chart[data-ready="true"]').waitFor();
  t.equal(await page.locator('#cost-chart canvas').count(), 1, 'the chart is drawn');
  t.match(await page.locator('#suggested').innerText(), /1 × 2 cores/, 'the suggested size');
  t.equal(await page.locator('#evidence tbody tr').count(), 5, 'the evidence: each run used');
  t.equal(await page.locator('#runs tbody tr').count(), 5, 'each run\'s cost');
  t.same(errors, [], 'no script errors');
  await page.screenshot({ path: join(shots, 'dashboard-job-sizing.png'), fullPage: true });
});
