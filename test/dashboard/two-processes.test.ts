// The dashboard's acceptance with two real API processes, as the chart runs them: on the
// Kubernetes test bed (real apiserver and webhook; the FakeKubelet TEST DOUBLE runs driver pods
// with the fake-spark-submit TEST DOUBLE), two `submission-service api` processes (the compiled
// CLI: run `npx tsc -p tsconfig.json` first) verify keys against one watched Secret and sign
// sessions with its `session-secret`, behind a round-robin proxy that alternates per request
// and per upgraded connection. Headless Chromium signs in once, browses 20 pages and stops a
// running application with no 401 and no sign-in prompt; `keys revoke` ends the session on
// both processes at once.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import httpProxy from 'http-proxy';
import t from 'tap';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { SECRET_DATA_KEY } from '../../submit-api/auth/secret-key-store.js';
import { fakeJob, writeFakeSparkSubmit } from '../helpers/fake-spark-submit.js';
import { browsePages, watchedPage } from '../helpers/dashboard-pages.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';
import { binPath, http, runCli } from '../helpers/service.js';
import { launchChromium } from '../helpers/browser.js';

const shots = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'submission-service-dashboard');
const AUTH_SECRET = 'submission-service-auth';

interface TestLike { teardown(fn: () => unknown): void }

/** `submission-service api` with auth on, keys from the Secret; resolves with its base URL once it listens. */
function apiProcess(t: TestLike, args: { kubeconfig: string; namespace: string; dataDir: string; sessionSecret: string }): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [
    binPath, 'api', '--kubeconfig', args.kubeconfig, '--namespace', args.namespace, '--port', '0', '--host', '127.0.0.1',
    '--auth', 'on', '--keys-secret', `${args.namespace}/${AUTH_SECRET}`, '--data-dir', args.dataDir, '--lease-seconds', '2',
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', SUBMISSION_SERVICE_SESSION_SECRET: args.sessionSecret } });
  let stderr = '';
  child.stderr!.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  t.teardown(async () => { if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await exited; } });
  return new Promise((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`the api process exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = / at (http:\/\/[^ ]+)\/api\//.exec(line);
      if (match) ok({ url: match[1], child });
    });
  });
}

/** One address in front of the targets: each request, and each upgraded connection, goes to the next one in turn. */
async function roundRobin(t: TestLike, targets: string[]) {
  const proxy = httpProxy.createProxyServer({});
  proxy.on('error', (_err, _req, res) => {
    if ('writeHead' in res) { if (!res.headersSent) res.writeHead(502).end(); } else (res as Socket).destroy();
  });
  const served = targets.map(() => 0);
  const unauthorized = targets.map(() => 0);
  let turn = 0;
  const pick = () => turn++ % targets.length;
  const front = createServer((req, res) => {
    const i = pick();
    res.on('finish', () => { served[i] += 1; if (res.statusCode === 401) unauthorized[i] += 1; });
    proxy.web(req, res, { target: targets[i] });
  });
  front.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const i = pick();
    served[i] += 1;
    proxy.ws(req, socket, head, { target: targets[i] });
  });
  await new Promise<void>((ok) => front.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => { front.closeAllConnections(); front.close(() => ok()); proxy.close(); }));
  return { url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, served, unauthorized };
}

t.test('two API processes on the test bed behind a round-robin proxy: one sign-in, 20 pages, a stop, revocation', { timeout: 300_000 }, async (t) => {
  const bed = await startKubeBed(t);
  const { namespace } = bed;
  // Only the two processes serve and own status: the bed's in-process API steps aside.
  await bed.api.close();
  const kubelet = new FakeKubelet({ clients: bed.clients, namespace, dataDir: join(bed.dir, 'kubelet'), sparkSubmit: writeFakeSparkSubmit(bed.dir), cores: 4 });
  await kubelet.start();
  t.teardown(() => kubelet.stop());

  // The auth Secret as the chart leaves it: no keys yet, a generated session-secret.
  const sessionSecret = randomBytes(36).toString('base64url');
  await bed.clients.core.createNamespacedSecret({
    namespace, body: { metadata: { name: AUTH_SECRET }, type: 'Opaque', stringData: { [SECRET_DATA_KEY]: '{"version":1,"keys":[]}', 'session-secret': sessionSecret } },
  });
  const keys = (...args: string[]) => runCli(['keys', ...args, '--secret', `${namespace}/${AUTH_SECRET}`, '--kubeconfig', bed.testbed.kubeconfig]);
  const created = await keys('create', '--role', 'user', '--label', 'browser');
  t.equal(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  const keyId = /Created user key (\S+)\./.exec(created.stderr)?.[1];
  t.match(key, /^ssk_/, 'a key printed once');
  t.ok(keyId, created.stderr);

  const processes = await Promise.all(['a', 'b'].map((n) => apiProcess(t, { kubeconfig: bed.testbed.kubeconfig, namespace, dataDir: join(bed.dir, `api-${n}`), sessionSecret })));
  const targets = processes.map((p) => p.url);
  const front = await roundRobin(t, targets);
  const address = front.url;
  const headers = { 'x-api-key': key };
  // Both processes list the Secret before they listen, but the key was written just before:
  // wait until each accepts it.
  for (const target of targets) await eventually(() => http(target, 'GET', '/api/apps/', undefined, headers), (r) => r.status === 200, { what: `${target} to accept the key` });

  const submitted: string[] = [];
  for (const job of ['etl', 'etl', 'report', 'ml']) {
    const res = await http(address, 'POST', '/api/apps/', { jobName: job, configOverrides: fakeJob({ lines: 2 }) }, headers);
    t.equal(res.status, 201, res.text);
    submitted.push(res.json.appName);
  }
  const longRes = await http(address, 'POST', '/api/apps/', { jobName: 'long', configOverrides: fakeJob({ lines: 900, tick: 0.2 }) }, headers);
  t.equal(longRes.status, 201, longRes.text);
  const long = longRes.json.appName as string;
  await eventually(() => http(address, 'GET', `/api/apps/${long}`, undefined, headers), (r) => r.json?.state === 'RUNNING', { what: 'the long app to run', timeoutMs: 60_000 });

  mkdirSync(shots, { recursive: true });
  const browser = await launchChromium(t);
  const { page, unauthorized, errors } = await watchedPage(browser);

  await page.goto(`${address}/dashboard/`);
  await page.locator('#login').waitFor();
  await page.locator('#key').fill(key);
  await page.locator('#key').press('Enter');
  await page.locator('section.job').first().waitFor();
  unauthorized.length = 0; // the 401 before signing in was expected
  const before = [...front.unauthorized];
  const servedBefore = [...front.served];

  await browsePages(t, page, address, [...submitted, long]);
  const browsed = front.served.map((n, i) => n - servedBefore[i]);
  t.ok(browsed.every((n) => n >= 10), `both processes served the pages' requests (${browsed.join(' / ')})`);

  await page.goto(`${address}/dashboard/apps/${long}`);
  await page.locator('#stop').waitFor();
  await page.waitForFunction(() => /fake line \d+ of 900/.test(document.getElementById('log')?.textContent ?? ''));
  page.once('dialog', (dialog) => void dialog.accept());
  await page.locator('#stop').click();
  await page.waitForFunction(() => document.querySelector('#state .badge')?.textContent === 'KILLED');
  for (const target of targets) t.equal((await http(target, 'GET', `/api/apps/${long}`, undefined, headers)).json.state, 'KILLED', `${target} reads it KILLED`);
  await page.screenshot({ path: join(shots, 'dashboard-two-processes.png'), fullPage: true });
  t.same(unauthorized, [], 'no 401 in the browser while signed in');
  t.same(front.unauthorized, before, 'and none from either process');
  t.same(errors, [], 'no script errors');

  // Revocation through the Secret: each process's watched copy drops the key, so the cookie
  // the browser holds is refused by both.
  const cookie = (await page.context().cookies()).find((c) => c.name === 'ss_session');
  t.ok(cookie, 'the browser holds a session cookie');
  const withCookie = { cookie: `ss_session=${cookie!.value}` };
  for (const target of targets) t.equal((await http(target, 'GET', '/api/apps/', undefined, withCookie)).status, 200, `${target} accepts the cookie`);
  const revokedAt = performance.now();
  const revoked = await keys('revoke', keyId!);
  t.equal(revoked.code, 0, `keys revoke: ${revoked.stderr.trim()}`);
  const cliMs = performance.now() - revokedAt;
  const refused = await Promise.all(targets.map(async (target) => {
    await eventually(() => http(target, 'GET', '/api/apps/', undefined, withCookie), (r) => r.status === 401, { what: `${target} to refuse the session`, intervalMs: 5, timeoutMs: 60_000 });
    return performance.now() - revokedAt;
  }));
  t.comment(`keys revoke (a CLI process) took ${cliMs.toFixed(0)} ms; both API processes refused the session ${(Math.max(...refused) - cliMs).toFixed(0)} ms after it exited`);
  t.equal(refused.length, targets.length, 'every API process refuses the revoked session');
  await page.goto(`${address}/dashboard/apps/${long}`);
  await page.locator('#login').waitFor();
  t.pass('the dashboard asks to sign in again');
});
