// The list page in Chromium: a job's schedule (cron, time zone, next run) and its pause button.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { launchChromium, openPage } from '../helpers/browser.js';


t.test('a job card shows its schedule and pauses and resumes it', async (t) => {
  const api = await startTestApi(t, { schedules: {} });
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  t.equal((await api.call('POST', '/api/schedules/', { name: 'nightly', schedule: '30 2 * * *', timeZone: 'Europe/Berlin', jobName: 'etl', configOverrides: fakeJob() })).status, 201);
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'etl', configOverrides: fakeJob() })).status, 201);
  const browser = await launchChromium(t);
  const page = await openPage(browser);
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.goto(`${address}/dashboard/`);
  const line = page.locator('section[data-job="etl"] li[data-schedule="nightly"]');
  await line.waitFor();
  t.match(await line.innerText(), /Schedule 30 2 \* \* \* \(Europe\/Berlin\) · next run \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/);
  await line.locator('button', { hasText: 'Pause' }).click();
  await line.locator('button', { hasText: 'Resume' }).waitFor();
  t.match(await line.innerText(), /paused/);
  t.equal((await api.call('GET', '/api/schedules/nightly')).json.suspend, true, 'paused through the API');
  await line.locator('button', { hasText: 'Resume' }).click();
  await line.locator('button', { hasText: 'Pause' }).waitFor();
  t.equal((await api.call('GET', '/api/schedules/nightly')).json.suspend, false);
  t.same(errors, [], 'no script errors');
});
