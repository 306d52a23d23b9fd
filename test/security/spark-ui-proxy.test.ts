// The Spark UI proxy facing a hostile driver: user A's application serves, as its "Spark UI", a
// page whose script calls the API with whoever views it (a tiny Python server standing in for
// the driver). An admin opens it from the dashboard in Chromium: the page renders, no API call
// succeeds (the template it posts is not created), cookies pass neither way. User B cannot open
// A's UI nor reach Spark's kill URL; A reaches the kill URL only with its API key. Once on the
// service's host (sandboxed), once on a Spark UI host of its own (--spark-ui-host).
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Response } from 'playwright-core';
import t, { type Test } from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { launchChromium, openContext } from '../helpers/browser.js';

const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');

// TEST DOUBLE for spark-submit: serves a hostile page on the spark.ui.port it is given.
const HOSTILE_DRIVER = `#!/usr/bin/env python3
import sys, http.server
conf = dict(a.split('=', 1) for a in sys.argv if a.startswith('spark.') and '=' in a)
port = int(next(a.split('=', 1)[1] for a in sys.argv if a.startswith('spark.ui.port=') and a.split('=', 1)[1] != '0'))
base = conf.get('spark.ui.proxyBase', '')
PAGE = """<!doctype html><html><head><title>Spark Jobs</title><link rel="stylesheet" href="BASE/static/hostile.css"></head>
<body><h1 id="heading">Spark Jobs</h1><a id="kill" href="BASE/jobs/job/kill/?id=0">(kill)</a><pre id="result">running</pre>
<script>
(async () => {
  const out = [];
  const json = { 'content-type': 'application/json', 'x-requested-with': 'XMLHttpRequest' };
  const template = { name: 'stolen', config: { driver: { serviceAccount: 'cluster-admin' } } };
  const tries = [
    ['POST /api/config-templates/', () => fetch('/api/config-templates/', { method: 'POST', credentials: 'include', headers: json, body: JSON.stringify(template) })],
    ['GET /api/apps/', () => fetch('/api/apps/', { credentials: 'include' })],
    ['GET /dashboard/session', () => fetch('/dashboard/session', { credentials: 'include' })],
  ];
  for (const [name, call] of tries) {
    try { const r = await call(); out.push(name + ' answered ' + r.status + ' ' + (await r.text()).slice(0, 80)); } catch (e) { out.push(name + ' failed'); }
  }
  try { out.push('cookie ' + JSON.stringify(document.cookie)); } catch (e) { out.push('cookie unreadable'); }
  document.getElementById('result').textContent = out.join('\\\\n') + '\\\\ndone';
})();
</script></body></html>""".replace('BASE', base)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print('driver saw', self.command, self.path, 'cookie=%s' % self.headers.get('cookie'),
              'key=%s' % (self.headers.get('x-api-key') or self.headers.get('authorization')), flush=True)
        if self.path == '/':
            # As Spark's Jetty does: to the jobs page, with its own address.
            self.send_response(302)
            self.send_header('location', 'http://127.0.0.1:%d/jobs/' % port)
            self.send_header('content-length', '0')
            self.end_headers()
            return
        css = self.path.startswith('/static/')
        body = b'h1 { color: rgb(170, 0, 0); }' if css else PAGE.encode()
        self.send_response(200)
        self.send_header('content-type', 'text/css' if css else 'text/html; charset=utf-8')
        self.send_header('set-cookie', 'planted=by-the-driver; Path=/')
        self.send_header('access-control-allow-origin', '*')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        if self.command == 'GET':
            self.wfile.write(body)
    do_HEAD = do_GET
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler).serve_forever()
`;

interface Setup { api: TestApi; address: string; appName: string; keys: { a: string; b: string; admin: string }; driverLog: () => string }

async function hostileApp(t: Test, sparkUiHost?: string): Promise<Setup> {
  const root = tempDir(t);
  const sparkSubmit = join(root, 'hostile-spark-submit');
  writeFileSync(sparkSubmit, HOSTILE_DRIVER);
  chmodSync(sparkSubmit, 0o755);
  const store = new FileKeyStore(join(root, 'keys'));
  const keys = { a: store.create('user', 'a').key, b: store.create('user', 'b').key, admin: store.create('admin', 'admin').key };
  const api = await startTestApi(t, { auth: { enabled: true, store }, spark: { sparkSubmit }, sparkUiHost });
  const address = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const res = await api.call('POST', '/api/apps/', { jobName: 'hostile', configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py' } }, { 'x-api-key': keys.a });
  t.equal(res.status, 201, res.body);
  const appName = res.json.appName as string;
  const getApp = async () => (await api.call('GET', `/api/apps/${appName}`, undefined, { 'x-api-key': keys.admin })).json;
  await waitForState(getApp, 'RUNNING');
  // The UI's port opens a moment after the driver starts: wait for its page through the proxy.
  const page = () => api.call('GET', `/dashboard/apps/${appName}/spark-ui/jobs/`, undefined, { 'x-api-key': keys.a, host: sparkUiHost ? `${appName}.${sparkUiHost}` : '127.0.0.1' });
  for (let i = 0; i < 300 && (await page()).status !== 200; i++) await new Promise((ok) => setTimeout(ok, 100));
  t.equal((await page()).status, 200, 'the owner opens the UI with its key');
  return { api, address, appName, keys, driverLog: () => readFileSync(join(api.dataDir, 'logs', `${appName}.log`), 'utf8') };
}

/** An admin signed in to the dashboard opens the app's "Spark UI" link; returns the page the link opened. */
async function adminOpensTheUi(t: Test, setup: Setup, context: BrowserContext) {
  t.equal((await context.request.post(`${setup.address}/dashboard/login`, { data: { key: setup.keys.admin } })).status(), 200, 'the admin signs in');
  const page = await context.newPage();
  await page.goto(`${setup.address}/dashboard/apps/${setup.appName}`);
  await page.locator('#spark-ui:not([hidden])').waitFor();
  const documents: Response[] = [];
  context.on('response', (r) => { if (r.request().resourceType() === 'document') documents.push(r); });
  const [ui] = await Promise.all([context.waitForEvent('page'), page.locator('#spark-ui').click()]);
  await ui.locator('#result', { hasText: 'done' }).waitFor();
  const main = documents.find((r) => r.url().includes('/spark-ui/jobs/') && r.status() === 200);
  if (!main) throw new Error(`no jobs page among ${documents.map((r) => `${r.status()} ${r.url()}`).join(', ')}`);
  return { ui, main };
}

async function checkNothingLeaked(t: Test, setup: Setup, result: string) {
  t.notMatch(result, /answered 2\d\d/, `no API call of the page succeeded:\n${result}`);
  const stolen = await setup.api.call('GET', '/api/config-templates/stolen', undefined, { 'x-api-key': setup.keys.admin });
  t.equal(stolen.status, 404, 'the template the page posted was not created');
  t.notMatch(setup.driverLog(), /cookie=(?!None)/, 'the driver never received a cookie');
  t.notMatch(setup.driverLog(), /key=(?!None)/, 'nor an API key');
}

async function checkOwnership(t: Test, setup: Setup, host: string) {
  const { api, appName, keys } = setup;
  const ui = `/dashboard/apps/${appName}/spark-ui`;
  const as = (key: string, extra: Record<string, string> = {}) => ({ 'x-api-key': key, host, ...extra });
  t.equal((await api.call('GET', `${ui}/jobs/`, undefined, as(keys.b))).status, 403, 'user B cannot open user A\'s Spark UI');
  t.equal((await api.call('GET', `${ui}/jobs/job/kill/?id=0`, undefined, as(keys.b))).status, 403, 'nor its kill URL');
  t.equal((await api.call('GET', `${ui}/stages/stage/KILL;x=1/?id=0&terminate=true`, undefined, as(keys.b))).status, 403, 'in any spelling');
  t.equal((await api.call('GET', `${ui}/jobs/`, undefined, { host })).status, 401, 'nobody without a key');
  const login = await api.call('POST', '/dashboard/login', { key: keys.b });
  const bSession = String(login.headers['set-cookie']).split(';', 1)[0]!;
  t.equal((await api.call('GET', `${ui}/jobs/`, undefined, { cookie: bSession, host: '127.0.0.1' })).status, 403, 'B\'s dashboard session does not open it either');
  const aLogin = String((await api.call('POST', '/dashboard/login', { key: keys.a })).headers['set-cookie']).split(';', 1)[0]!;
  const crossSite = await api.call('GET', `${ui}/jobs/job/kill/?id=0`, undefined, { cookie: aLogin, host: '127.0.0.1', 'sec-fetch-site': 'cross-site' });
  t.equal(crossSite.status, 403, 'the owner\'s session cookie alone does not reach the kill URL from another site');
  t.notMatch(setup.driverLog(), /kill/, 'no kill request reached the driver');
  t.equal((await api.call('GET', `${ui}/jobs/job/kill/?id=0`, undefined, as(keys.a))).status, 200, 'the owner reaches it with its API key');
  t.match(setup.driverLog(), /driver saw GET \/jobs\/job\/kill\/\?id=0/);
  t.equal((await api.call('GET', `${ui}/jobs/`, undefined, as(keys.admin))).status, 200, 'an admin opens it');
}

t.test('one host: the hostile page runs sandboxed and cannot act as the admin who opens it', { timeout: 180_000 }, async (t) => {
  mkdirSync(shots, { recursive: true });
  const setup = await hostileApp(t);
  const browser = await launchChromium(t);
  const context = await openContext(browser, { viewport: { width: 1000, height: 500 } });
  const { ui, main } = await adminOpensTheUi(t, setup, context);
  t.match(main.headers()['content-security-policy'] ?? '', /^sandbox allow-scripts/, 'served in a sandbox');
  t.notMatch(main.headers()['content-security-policy'] ?? '', /allow-same-origin/);
  t.equal((main.headers()['set-cookie'] ?? '').includes('planted'), false, 'the driver\'s Set-Cookie is dropped');
  const result = await ui.locator('#result').innerText();
  await checkNothingLeaked(t, setup, result);
  t.equal(await ui.locator('#heading').innerText(), 'Spark Jobs', 'the page rendered');
  // The sandboxed page fetches its static files without a cookie: the proxy answers those from
  // Spark's own files (here none: no local Spark), never from the application (issue 25).
  t.notMatch(setup.driverLog(), /driver saw \w+ \/static\//, 'its cookieless static file requests never reached the driver');
  t.equal(await ui.locator('#heading').evaluate((h) => getComputedStyle(h).color), 'rgb(0, 0, 0)', 'so the driver\'s own stylesheet did not apply');
  t.notOk((await context.cookies()).some((c) => c.name === 'planted'), 'no cookie of the driver in the browser');
  await ui.screenshot({ path: join(shots, 'spark-ui-sandboxed.png') });
  // Its own kill link, followed in the sandbox: a cross-site request the proxy refuses.
  const kill = await Promise.all([ui.waitForResponse((r) => r.url().includes('/kill/')), ui.locator('#kill').click()]);
  t.equal(kill[0].status(), 403, 'the kill link from the sandboxed page is refused');
  await checkOwnership(t, setup, '127.0.0.1');
});

t.test('a Spark UI host of its own: each application\'s page runs on its own origin, where only its Spark UI is served', { timeout: 180_000 }, async (t) => {
  const setup = await hostileApp(t, 'ui.localhost');
  const appHost = `${setup.appName}.ui.localhost`;
  const browser = await launchChromium(t);
  const context = await openContext(browser, { viewport: { width: 1000, height: 500 } });
  const { ui, main } = await adminOpensTheUi(t, setup, context);
  t.equal(new URL(ui.url()).hostname, appHost, 'the link led to the application\'s own origin under the Spark UI host');
  t.notMatch(ui.url(), /ss_ui_grant/, 'the hand-over grant is gone from the address');
  t.equal(main.headers()['content-security-policy'], undefined, 'no sandbox needed there');
  const result = await ui.locator('#result').innerText();
  t.match(result, /POST \/api\/config-templates\/ answered 40[14] /, 'the API does not serve the Spark UI host (no key, no session there)');
  await checkNothingLeaked(t, setup, result);
  const cookies = await context.cookies();
  t.ok(cookies.some((c) => c.name === 'ss_spark_ui' && c.domain === appHost && c.path === `/dashboard/apps/${setup.appName}/spark-ui/`), 'a cookie for this UI only, on its origin only');
  for (const host of ['ui.localhost', appHost]) {
    t.equal((await setup.api.call('GET', '/api/apps/', undefined, { 'x-api-key': setup.keys.admin, host })).status, 404, `nothing but Spark UIs on ${host}`);
  }
  // What a hostile page of another application could try (issue 25: on one shared origin, a page
  // that history.replaceState'd itself under this application's path passed the Referer check).
  const ui0 = `/dashboard/apps/${setup.appName}/spark-ui/jobs/`;
  const onAnotherHost = await setup.api.call('GET', ui0, undefined, {
    'x-api-key': setup.keys.admin, host: 'another.ui.localhost', 'sec-fetch-site': 'same-origin', referer: `http://another.ui.localhost${ui0}`,
  });
  t.equal(onAnotherHost.status, 404, 'another application\'s origin does not serve this one, whatever its path and Referer say');
  t.equal((await setup.api.call('GET', ui0, undefined, { 'x-api-key': setup.keys.admin, host: 'ui.localhost' })).status, 404, 'nor does the bare Spark UI host');
  const fromAnother = await setup.api.call('GET', ui0, undefined, {
    'x-api-key': setup.keys.admin, host: appHost, 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'cors', referer: 'http://another.ui.localhost/dashboard/apps/another/spark-ui/jobs/',
  });
  t.equal(fromAnother.status, 403, 'a page of another application\'s origin cannot read this one');
  const navigation = await setup.api.call('GET', ui0, undefined, { 'x-api-key': setup.keys.admin, host: appHost, 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' });
  t.equal(navigation.status, 200, 'while a link from it still opens the page (a navigation)');
  await checkOwnership(t, setup, appHost);
});
