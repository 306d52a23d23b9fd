// The web dashboard at /dashboard/: its pages and assets over inject, the session cookie of a
// protected service, then the real page in headless Chromium over a LocalCluster whose
// spark-submit is the TEST DOUBLE of test/helpers/fake-spark-submit.ts.
// Screenshots go to $DASHBOARD_SCREENSHOTS (default <tmp>/submission-service-dashboard), never the repo.
import { randomBytes } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import httpProxy from 'http-proxy';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { buildService } from '../../cli/service.js';
import { loadSessionSecret } from '../../dashboard/session-secret.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { browsePages, watchedPage } from '../helpers/dashboard-pages.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { craftRecords } from '../helpers/records.js';
import { waitForState } from '../helpers/poll.js';
import { launchChromium, openPage } from '../helpers/browser.js';

const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');

t.test('pages and assets', async (t) => {
  const api = await startTestApi(t);
  for (const url of ['/dashboard/', '/dashboard', '/dashboard/apps/some-app-20260101-000000-abcde']) {
    const res = await api.call('GET', url);
    t.equal(res.status, 200, url);
    t.match(res.headers['content-type'], /^text\/html/, `${url} is HTML`);
    t.match(res.body, /<title>Submission Service<\/title>/);
    t.match(res.headers['content-security-policy'], /script-src 'self'/, 'no inline script allowed');
  }
  const js = await api.call('GET', '/dashboard/static/dashboard.js');
  t.equal(js.status, 200);
  t.match(js.headers['content-type'], /^text\/javascript/);
  for (const module of ['dashboard.js', 'dom.js', 'list-page.js', 'app-page.js']) {
    const source = await api.call('GET', `/dashboard/static/${module}`);
    t.equal(source.status, 200, module);
    t.notMatch(source.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, `${module} never parses data as HTML`);
  }
  t.match((await api.call('GET', '/dashboard/static/dashboard.css')).headers['content-type'], /^text\/css/);
  t.equal((await api.call('GET', '/dashboard/static/nope.js')).status, 404);
  t.equal((await api.call('GET', '/dashboard/static/..%2Fplugin.ts')).status, 404, 'only the listed files');
  t.same((await api.call('GET', '/dashboard/session')).json, { authEnabled: false, signedIn: true, keyId: null, role: null, csrfHeader: 'x-requested-with' }, 'auth off: no login');
  const openApi = (await api.call('GET', '/api/openapi.json')).json;
  t.notOk(Object.keys(openApi.paths).some((p) => p.startsWith('/dashboard')), 'not in the API reference');
});

t.test('protected: a key once, then a signed session cookie; writes need the CSRF header', async (t) => {
  const store = new FileKeyStore(t.testdir());
  const user = store.create('user');
  const api = await startTestApi(t, { auth: { enabled: true, store } });

  t.equal((await api.call('GET', '/dashboard/')).status, 200, 'the page itself is open (it shows the sign-in form)');
  t.equal((await api.call('GET', '/api/apps/')).status, 401);
  t.match((await api.call('GET', '/dashboard/session')).json, { authEnabled: true, signedIn: false });
  t.equal((await api.call('POST', '/dashboard/login', { key: 'ssk_wrong' })).status, 401, 'a wrong key');

  const login = await api.call('POST', '/dashboard/login', { key: user.key });
  t.equal(login.status, 200);
  const setCookie = String(login.headers['set-cookie']);
  t.match(setCookie, /^ss_session=[\w-]+\.[\w-]+\.[\w-]+; /, 'a signed token');
  t.match(setCookie, /; HttpOnly/);
  t.match(setCookie, /; SameSite=Strict/);
  t.match(setCookie, /; Path=\//);
  t.match(setCookie, /; Max-Age=43200/, '12 hours');
  t.notMatch(setCookie, /; Secure/, 'plain HTTP, no trusted proxy');
  t.notMatch(setCookie, new RegExp(user.key.slice(4)), 'the cookie is not the key');
  const cookie = setCookie.split(';', 1)[0];
  const claims = JSON.parse(Buffer.from(cookie.split('.')[1], 'base64url').toString());
  t.equal(claims.sub, user.id, 'it names the key by id');
  t.ok(claims.exp - claims.iat === 43200, 'and expires');

  t.match((await api.call('GET', '/dashboard/session', undefined, { cookie })).json, { signedIn: true, keyId: user.id, role: 'user', csrfHeader: 'x-requested-with' });
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie })).status, 200, 'reads with the cookie');
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie: 'ss_session=forged' })).status, 401, 'a made-up session');
  const tampered = cookie.slice(0, -2) + (cookie.endsWith('AA') ? 'BB' : 'AA');
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie: tampered })).status, 401, 'a changed signature');
  const [, body, sig] = cookie.split('.');
  const none = `ss_session=${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${body}.`;
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie: none })).status, 401, 'alg none is refused');
  t.ok(sig.length > 0);

  const submission = { jobName: 'cookie', configOverrides: fakeJob({ lines: 200, tick: 0.1 }) };
  const csrf = await api.call('POST', '/api/apps/', submission, { cookie });
  t.equal(csrf.status, 403, 'a cookie-only write without the custom header (what a cross-site form sends)');
  t.match(csrf.json.message, /x-requested-with/);
  const created = await api.call('POST', '/api/apps/', submission, { cookie, 'x-requested-with': 'dashboard' });
  t.equal(created.status, 201, 'a write from the dashboard');
  t.equal(created.json.submittedBy, user.id, 'as the signed-in key');
  const stopped = await api.call('POST', `/api/apps/${created.json.appName}/stop`, undefined, { cookie, 'x-requested-with': 'dashboard' });
  t.equal(stopped.status, 200, 'stop from the dashboard');
  t.equal((await api.call('DELETE', `/api/apps/${created.json.appName}`, undefined, { cookie, 'x-requested-with': 'dashboard' })).status, 204, 'delete too');
  t.equal((await api.call('PUT', '/api/config-templates/x', { name: 'x', config: {} }, { cookie, 'x-requested-with': 'dashboard' })).status, 403, 'roles hold: a user session writes no templates');

  const ui = `/dashboard/apps/${created.json.appName}/spark-ui/`;
  t.equal((await api.call('GET', ui)).status, 401, 'the Spark UI proxy needs a session too');
  t.equal((await api.call('GET', ui, undefined, { cookie })).status, 404, 'with one: not running, so nothing to show');
  t.equal((await api.call('GET', ui, undefined, { 'x-api-key': user.key })).status, 404, 'or a key');
  const bare = await api.call('GET', `/dashboard/apps/${created.json.appName}/spark-ui`);
  t.equal(bare.status, 302, 'the bare path');
  t.equal(bare.headers.location, ui, 'goes to the UI root');

  store.revoke(user.id);
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie })).status, 401, 'revoking the key ends its sessions at once');
  t.equal((await api.call('GET', ui, undefined, { cookie })).status, 401, 'and its Spark UI access');
  t.match((await api.call('GET', '/dashboard/session', undefined, { cookie })).json, { signedIn: false });

  const other = store.create('user');
  const again = String((await api.call('POST', '/dashboard/login', { key: other.key })).headers['set-cookie']).split(';', 1)[0];
  t.equal((await api.call('GET', '/api/apps/', undefined, { cookie: again })).status, 200);
  const out = await api.call('POST', '/dashboard/logout', undefined, { cookie: again });
  t.match(String(out.headers['set-cookie']), /^ss_session=; .*Max-Age=0/, 'sign out removes the cookie');
});

t.test('sessions: any replica with the shared secret accepts them; a restart keeps them; Secure behind a trusted TLS proxy', async (t) => {
  const dir = t.testdir();
  const store = new FileKeyStore(dir);
  const user = store.create('user');
  const secret = loadSessionSecret(join(dir, 'data'));
  t.equal(statSync(join(dir, 'data', 'session-secret')).mode & 0o777, 0o600, 'the secret file is 0600');
  t.same(loadSessionSecret(join(dir, 'data')), secret, 'read again, not made again');
  t.same(loadSessionSecret(join(dir, 'nowhere'), { SUBMISSION_SERVICE_SESSION_SECRET: 'x'.repeat(40) }), Buffer.from('x'.repeat(40)), 'the env var wins');
  t.throws(() => loadSessionSecret(dir, { SUBMISSION_SERVICE_SESSION_SECRET: 'short' }), /at least 32/);

  const a = await startTestApi(t, { auth: { enabled: true, store }, sessionSecret: secret });
  const b = await startTestApi(t, { auth: { enabled: true, store }, sessionSecret: secret, trustProxy: true });
  const c = await startTestApi(t, { auth: { enabled: true, store } }); // another secret
  const cookie = String((await a.call('POST', '/dashboard/login', { key: user.key })).headers['set-cookie']).split(';', 1)[0];
  t.equal((await b.call('GET', '/api/apps/', undefined, { cookie })).status, 200, 'issued by one replica, accepted by another');
  t.equal((await c.call('GET', '/api/apps/', undefined, { cookie })).status, 401, 'not by a service with another secret');

  const behindTls = await b.call('POST', '/dashboard/login', { key: user.key }, { 'x-forwarded-proto': 'https' });
  t.match(String(behindTls.headers['set-cookie']), /; Secure/, 'X-Forwarded-Proto https from a trusted proxy');
  const spoofed = await a.call('POST', '/dashboard/login', { key: user.key }, { 'x-forwarded-proto': 'https' });
  t.notMatch(String(spoofed.headers['set-cookie']), /; Secure/, 'ignored without --trust-proxy');
});

async function launch(t: { teardown(fn: () => unknown): void }): Promise<Browser> {
  mkdirSync(shots, { recursive: true });
  return launchChromium(t);
}

/** A notebook kernel and a Spark Connect session are marked in the list; a batch job is neither. */
async function checkMarks(t: Test, page: Page, apps: { kernel: string; connect: string; batch: string }) {
  const row = (app: string) => page.locator(`tr[data-app="${app}"]`);
  t.equal(await row(apps.kernel).locator('.tag.kernel').innerText(), 'kernel', 'a notebook kernel is marked');
  t.equal(await row(apps.batch).locator('.tag.kernel').count(), 0, 'a batch job is not');
  await row(apps.connect).locator('.badge').filter({ hasText: 'COMPLETED' }).waitFor();
  t.equal(await row(apps.connect).locator('.tag.connect').innerText(), 'Connect', 'a Spark Connect session is marked');
  t.match(await row(apps.connect).locator('.tag.connect').getAttribute('title'), /c0ffee00-0000-4000-8000-000000000042/, 'with its session id');
  t.equal(await row(apps.batch).locator('.tag.connect').count(), 0, 'a batch job is not one');
}

t.test('in Chromium: empty, grouped by jobName, counts, filters, search, kernels, live by events', async (t) => {
  // Kernel labels come from the notebook gateway only: this test sends its proof header.
  const api = await startTestApi(t, { cores: 8, gatewayProof: 'as-the-gateway' });
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launch(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));

  await page.goto(`${address}/dashboard/`);
  await page.locator('#empty').waitFor();
  t.match(await page.locator('#empty').innerText(), /No applications yet/);
  t.match(await page.locator('#auth-off').innerText(), /Authentication is off/, 'auth off: a banner says so');
  t.ok(await page.locator('#auth-off').isVisible());
  await page.screenshot({ path: join(shots, 'dashboard-empty.png') });

  const submit = async (jobName: string, directives: Parameters<typeof fakeJob>[0], labels?: Record<string, string>) => {
    const res = await api.call('POST', '/api/apps/', { jobName, configOverrides: fakeJob(directives), labels }, { 'x-submission-service-gateway': 'as-the-gateway' });
    t.equal(res.status, 201, `submitted ${jobName}`);
    return res.json.appName as string;
  };
  const daily = [await submit('daily-report', { lines: 2 }), await submit('daily-report', { lines: 1, exit: 3 }), await submit('daily-report', { lines: 3 })];
  const hourly = await submit('hourly-etl', { lines: 2 }, { team: 'payments' });
  const kernel = await submit('notebook', { lines: 4000, tick: 0.25 }, { 'kernel.submission-service.io/id': 'k-123' });
  const connect = await submit('notebook', { lines: 1 }, { 'connect.submission-service.io/session': 'c0ffee00-0000-4000-8000-000000000042' });
  for (const name of [daily[0], daily[2], hourly, connect]) await waitForState(() => api.getApp(name), 'COMPLETED');
  await waitForState(() => api.getApp(daily[1]), 'FAILED');
  await waitForState(() => api.getApp(kernel), 'RUNNING');

  // The page had nothing: everything arrives by the events stream, without a reload or a poll.
  await page.locator(`tr[data-app="${hourly}"] .badge`).filter({ hasText: 'COMPLETED' }).waitFor();
  await page.locator(`tr[data-app="${daily[2]}"] .badge`).filter({ hasText: 'COMPLETED' }).waitFor();
  const jobs = await page.locator('section.job').evaluateAll((sections) => sections.map((s) => ({
    job: s.getAttribute('data-job'),
    apps: [...s.querySelectorAll('tbody tr')].map((r) => r.getAttribute('data-app')),
    strip: [...s.querySelectorAll('.strip .tick')].map((a) => a.textContent?.trim()),
  })));
  t.same(jobs.map((j) => j.job), ['notebook', 'hourly-etl', 'daily-report'], 'one card per jobName, the newest run first');
  t.same(jobs.find((j) => j.job === 'daily-report')?.apps, [...daily].reverse(), 'a job\'s runs together, newest first');
  t.same(jobs.find((j) => j.job === 'daily-report')?.strip, [`${daily[2]}: COMPLETEDC`, `${daily[1]}: FAILEDF`, `${daily[0]}: COMPLETEDC`], 'the run-history strip says each state in text');
  await checkMarks(t, page, { kernel, connect, batch: hourly });
  await page.locator('#counts [data-state="COMPLETED"] .n').filter({ hasText: /^4$/ }).waitFor();
  const counts = Object.fromEntries(await page.locator('#counts button').evaluateAll((bs) => bs.map((b) => [b.getAttribute('data-state'), b.querySelector('.n')?.textContent])));
  t.same(counts, { ALL: '6', PENDING: '0', RUNNING: '1', COMPLETED: '4', FAILED: '1', KILLED: '0', UNKNOWN: '0' }, 'counts per state');
  t.ok(requests.some((u) => u.includes('/api/apps/?') && u.includes('view=summary')), 'the list reads light items');
  t.notOk(requests.some((u) => /\/api\/apps\/\?(?!.*view=summary)/.test(u)), 'never the full records');
  await page.screenshot({ path: join(shots, 'dashboard-list.png'), fullPage: true });

  await page.locator('#counts [data-state="FAILED"]').click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);
  t.same(await page.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-app'))), [daily[1]], 'filter by state');
  t.match(page.url(), /\?state=FAILED$/, 'the filter is in the address');
  await page.locator('#counts [data-state="FAILED"]').click();
  await page.locator('#job-filter').selectOption('hourly-etl');
  await page.waitForFunction(() => document.querySelectorAll('section.job').length === 1);
  t.same(await page.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-app'))), [hourly], 'filter by job');
  await page.locator('#job-filter').selectOption('');
  await page.locator(`tr[data-app="${daily[0]}"]`).waitFor();
  await page.locator('#search').fill('payments');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);
  t.same(await page.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-app'))), [hourly], 'search finds labels too');
  await page.locator('#search').fill('no-such-thing');
  await page.locator('#empty').waitFor();
  t.match(await page.locator('#empty').innerText(), /No application matches/, 'an empty result says so');
  await page.locator('#counts [data-state="ALL"] .n').filter({ hasText: /^0$/ }).waitFor();
  t.pass('the counts follow the search (the server\'s answer)');
  await page.screenshot({ path: join(shots, 'dashboard-no-match.png') });
  await page.locator('#empty button').click();
  await page.locator(`tr[data-app="${daily[0]}"]`).waitFor();

  // A phone.
  const phone = await openPage(browser, { viewport: { width: 390, height: 844 }, isMobile: true });
  await phone.goto(`${address}/dashboard/`);
  await phone.locator(`tr[data-app="${hourly}"]`).waitFor();
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 0, `no sideways scrolling on a phone (${overflow} px)`);
  await phone.screenshot({ path: join(shots, 'dashboard-list-phone.png'), fullPage: true });
  await phone.close();

  // Keyboard: Tab reaches the filters and the links.
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter'); // the skip link
  const focusable = await page.evaluate(() => [...document.querySelectorAll('#main a, #main button, #main select, #main input')].length);
  t.ok(focusable > 10, 'links, buttons and fields are real controls');
  await api.call('POST', `/api/apps/${kernel}/stop`);
  await page.locator(`tr[data-app="${kernel}"] .badge`).filter({ hasText: 'KILLED' }).waitFor();
  t.pass('a stop elsewhere shows up live');
  t.same(errors, [], 'no script errors');
});

t.test('in Chromium: the search is the server\'s: it finds applications in pages not loaded, debounced, counts follow, keyboard', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const names = craftRecords(dataDir, 450); // the page loads the newest 200
  const api = await startTestApi(t, { dataDir });
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launch(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  const searches: string[] = [];
  page.on('request', (r) => { if (/\/api\/apps\/\?.*\bq=/.test(r.url())) searches.push(new URL(r.url()).searchParams.get('q') ?? ''); });

  // The page's timers run on a clock the test moves: the debounce is checked by time, not by how
  // fast a loaded machine types (the hog run once paused 250 ms after two keys).
  await page.clock.install();
  await page.goto(`${address}/dashboard/`);
  await page.locator('#counts [data-state="ALL"] .n').filter({ hasText: /^450$/ }).waitFor();
  await page.locator('section.job').first().waitFor();
  t.match(await page.locator('#summary').innerText(), /older ones not loaded yet/, 'older pages are not loaded');
  t.equal(await page.locator(`tr[data-app="${names[3]}"]`).count(), 0, 'an old application is not on the page');

  await page.keyboard.press('/');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'search', '"/" focuses the search');
  await page.clock.pauseAt(Date.now() + 1000);
  await page.keyboard.type(names[3].slice(-9), { delay: 15 });
  t.same(searches, [], 'no search while the keys come faster than the pause (250 ms)');
  await page.clock.runFor(300);
  // The counts are the server's alone: 1 is the answer to the whole search, not to a part of it.
  await page.locator('#counts [data-state="ALL"] .n').filter({ hasText: /^1$/ }).waitFor();
  await page.clock.resume();
  t.same(await page.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-app'))), [names[3]], 'found by the server in a page never loaded');
  t.same(searches, [names[3].slice(-9)], 'one search for 9 keys typed (debounced), counts follow it');

  await page.locator('#search').fill('');
  await page.locator('#search').type('DATA-TEAM');
  await page.locator('#search').press('Enter');
  // Exactly 45: the counts of the cleared search (450) hold "45" too, and would pass before the search's come.
  await page.locator('#counts [data-state="ALL"] .n').filter({ hasText: /^45$/ }).waitFor();
  const counts = Object.fromEntries(await page.locator('#counts button').evaluateAll((bs) => bs.map((b) => [b.getAttribute('data-state'), b.querySelector('.n')?.textContent])));
  t.same(counts, { ALL: '45', PENDING: '0', RUNNING: '0', COMPLETED: '15', FAILED: '15', KILLED: '15', UNKNOWN: '0' }, 'label values, ignoring case: counts per state within the search');
  t.match(await page.locator('#summary').innerText(), /45 shown matching “DATA-TEAM” in 1 job/, 'every match loaded, none left behind');
  t.match(page.url(), /\?q=DATA-TEAM$/, 'the search is in the address');
  await page.locator('#counts [data-state="FAILED"]').click();
  await page.locator('#counts [data-state="FAILED"][aria-pressed="true"]').waitFor();
  await page.waitForFunction(() => /15 shown/.test(document.getElementById('summary')?.textContent ?? ''));
  t.pass('with a state filter: 15');
  await page.screenshot({ path: join(shots, 'dashboard-search.png'), fullPage: true });
  await page.locator('#counts [data-state="FAILED"]').click();

  await page.locator('#search').press('Escape');
  await page.locator('#counts [data-state="ALL"] .n').filter({ hasText: /^450$/ }).waitFor();
  t.equal(await page.locator('#search').inputValue(), '', 'Escape clears the search');
  t.equal(new URL(page.url()).search, '', 'and the address');
  t.same(errors, [], 'no script errors');

  // The service goes away: a filter that cannot be read says so on the page.
  await api.app.close();
  await page.locator('#counts [data-state="KILLED"]').click();
  await page.locator('#problem').waitFor();
  t.match(await page.locator('#problem').innerText(), /^Could not load: /, 'a failed read is shown, not swallowed');
});

t.test('in Chromium: an application page with config and a live log', async (t) => {
  const api = await startTestApi(t);
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const browser = await launch(t);
  const page = await openPage(browser, { viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  // Long enough to be stopped while it runs on a loaded machine (2.5 min); the test stops it.
  const LINES = 600;
  const res = await api.call('POST', '/api/apps/', { jobName: 'streaming', configOverrides: fakeJob({ lines: LINES, tick: 0.25 }) });
  const live = res.json.appName as string;
  await page.goto(`${address}/dashboard/`);
  await page.locator(`tr[data-app="${live}"] a[href="/dashboard/apps/${live}"]`).click();
  await page.waitForURL(`**/dashboard/apps/${live}`);
  await page.locator('#config').waitFor();
  const config = JSON.parse((await page.locator('#config').getAttribute('data-json'))!);
  t.match(await page.locator('#config').innerText(), /mainApplicationFile: "local:\/\/\/fake\/job.py"/, 'shown as a readable tree');
  t.same(config.arguments, [`lines=${LINES}`, 'tick=0.25'], 'the configuration, as JSON');
  t.equal(config.mainApplicationFile, 'local:///fake/job.py');

  t.match(await page.locator('#submission').innerText(), /admitted by submission-service-rules\/v1/, 'admission shown');
  t.match(await page.locator('#submission').innerText(), /Driver → n1-standard-2/, 'the sizing decision');
  t.same(JSON.parse((await page.locator('#overrides').getAttribute('data-json'))!), fakeJob({ lines: LINES, tick: 0.25 }), 'the overrides');
  const log = page.locator('#log');
  await page.waitForFunction((n) => (document.getElementById('log')?.textContent ?? '').includes(`fake line 2 of ${n}`), LINES);
  const early = (await log.innerText()).split('\n').filter((l) => l.startsWith('fake line')).length;
  t.ok(early < LINES, `the log is read while the app runs (${early} lines so far)`);
  t.equal(await page.locator('#state .badge').innerText(), 'RUNNING');
  t.notOk(await page.locator('#stop').isHidden(), 'Stop is offered while running');
  await page.screenshot({ path: join(shots, 'dashboard-app-running.png'), fullPage: true });

  await page.waitForFunction(({ n, total }) => (document.getElementById('log')?.textContent ?? '').includes(`fake line ${n} of ${total}`), { n: early + 3, total: LINES });
  const later = (await log.innerText()).split('\n').filter((l) => l.startsWith('fake line')).length;
  t.ok(later > early, `more lines appear without a reload (${early} → ${later})`);

  // The connection drops (a replica restarts, a proxy times out): the page resumes from the
  // last byte it has, so no line is lost or shown twice.
  const resumed: string[] = [];
  page.on('request', (r) => { if (/\/log\?follow=true&offset=[1-9]/.test(r.url())) resumed.push(r.url()); });
  api.app.server.closeAllConnections();
  await page.waitForFunction(({ n, total }) => (document.getElementById('log')?.textContent ?? '').includes(`fake line ${n} of ${total}`), { n: later + 4, total: LINES });
  const lines = (await log.innerText()).split('\n').filter((l) => l.startsWith('fake line'));
  t.same(lines, lines.map((_, i) => `fake line ${i + 1} of ${LINES}`), `after a dropped connection: every line once, in order (${lines.length})`);
  t.ok(resumed.length >= 1, `the log was read again from an offset (${resumed[0]?.replace(/^.*\?/, '')})`);

  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('#stop').click();
  await page.waitForFunction(() => document.querySelector('#state .badge')?.textContent === 'KILLED');
  t.ok(await page.locator('#stop').isHidden(), 'no Stop once ended');
  await page.waitForFunction(() => document.getElementById('log-status')?.textContent === 'log ended');
  await page.screenshot({ path: join(shots, 'dashboard-app-stopped.png'), fullPage: true });

  await page.goto(`${address}/dashboard/apps/no-such-app`);
  await page.locator('#error').waitFor();
  t.match(await page.locator('#error').innerText(), /No such application/);
  t.same(errors, [], 'no script errors');
});

t.test('in Chromium, auth on, two API servers behind a round-robin proxy: one sign-in, 20 pages, a stop, sign-out, revocation', async (t) => {
  const keysDir = t.testdir();
  const store = new FileKeyStore(keysDir);
  const user = store.create('user');
  const secret = randomBytes(32);
  const a = await startTestApi(t, { auth: { enabled: true, store }, sessionSecret: secret, cores: 8 });
  // The second server: its own fastify, its own key store reading the same keys, the same
  // secret (as the chart gives every replica), over the same records.
  const b = await buildService({ cluster: a.cluster, auth: { enabled: true, store: new FileKeyStore(keysDir) }, sessionSecret: secret });
  t.teardown(() => b.close());
  const targets = [await a.app.listen({ port: 0, host: '127.0.0.1' }), await b.listen({ port: 0, host: '127.0.0.1' })];
  const proxy = httpProxy.createProxyServer({});
  proxy.on('error', (_err, _req, res) => { if ('writeHead' in res && !res.headersSent) res.writeHead(502).end(); });
  const served = [0, 0];
  let turn = 0;
  const front = createServer((req, res) => {
    const i = turn++ % 2;
    served[i] += 1;
    proxy.web(req, res, { target: targets[i] });
  });
  await new Promise<void>((ok) => front.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => { front.closeAllConnections(); front.close(() => ok()); proxy.close(); }));
  const address = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;

  const submitted: string[] = [];
  for (const job of ['etl', 'etl', 'report', 'ml']) {
    const res = await a.call('POST', '/api/apps/', { jobName: job, configOverrides: fakeJob({ lines: 2 }) }, { 'x-api-key': user.key });
    submitted.push(res.json.appName);
  }
  const longRes = await a.call('POST', '/api/apps/', { jobName: 'long', configOverrides: fakeJob({ lines: 600, tick: 0.2 }) }, { 'x-api-key': user.key });
  const long = longRes.json.appName as string;
  await waitForState(async () => (await a.cluster.get(long))!, 'RUNNING');

  const browser = await launch(t);
  const { page, unauthorized, errors } = await watchedPage(browser);

  await page.goto(`${address}/dashboard/`);
  await page.locator('#login').waitFor();
  await page.screenshot({ path: join(shots, 'dashboard-sign-in.png') });
  t.ok(await page.locator('#auth-off').isHidden(), 'no auth-off banner when auth is on');
  await page.locator('#key').fill(user.key);
  await page.locator('#key').press('Enter');
  await page.locator('section.job').first().waitFor();
  t.match(await page.locator('#who').innerText(), new RegExp(user.id));
  unauthorized.length = 0; // the 401 before signing in was expected

  await browsePages(t, page, address, [...submitted, long]);
  t.ok(served[0] > 10 && served[1] > 10, `both servers answered (${served.join(' / ')})`);

  await page.goto(`${address}/dashboard/apps/${long}`);
  await page.locator('#stop').waitFor();
  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('#stop').click();
  await page.waitForFunction(() => document.querySelector('#state .badge')?.textContent === 'KILLED');
  t.equal((await a.cluster.get(long))?.state, 'KILLED', 'stopped from the dashboard with auth on');
  t.same(unauthorized, [], 'no 401 while signed in, on either server');

  await page.locator('#logout').click();
  await page.locator('#login').waitFor();
  t.equal((await page.request.get(`${address}/api/apps/`)).status(), 401, 'signed out: 401 without a session');

  await page.locator('#key').fill(user.key);
  await page.locator('#key').press('Enter');
  await page.locator('section.job').first().waitFor();
  t.equal((await page.request.get(`${address}/api/apps/`)).status(), 200);
  store.revoke(user.id);
  t.equal((await page.request.get(`${address}/api/apps/`)).status(), 401, 'the revoked key\'s session ends at once');
  await page.goto(`${address}/dashboard/apps/${long}`);
  await page.locator('#login').waitFor();
  t.pass('and the dashboard asks to sign in again');
  t.same(errors, [], 'no script errors');
});
