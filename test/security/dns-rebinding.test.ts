// DNS rebinding: with auth off, a request whose Host is not one of the service's names (a
// page on evil.example that made its name resolve to 127.0.0.1) is refused; the real CLI in
// local mode serves loopback names only by default.
import { request } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

/** One request with a Host header of our choosing (fetch does not let a caller set it). */
function withHost(base: string, method: string, path: string, host: string, body?: unknown): Promise<{ status: number; json: any }> {
  return new Promise((ok, fail) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(base + path, { method, headers: { host, ...(data ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => { let json; try { json = JSON.parse(text); } catch { json = undefined; } ok({ status: res.statusCode ?? 0, json }); });
    });
    req.on('error', fail);
    req.end(data);
  });
}

t.test('the real local service (auth off by default) refuses a rebinding Host and serves loopback names', async (t) => {
  const root = tempDir(t);
  const env: NodeJS.ProcessEnv = { ...sparkEnv(), SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) };
  const service = await startService(t, { dataDir: join(root, 'data'), env });
  const port = new URL(service.url).port;
  const submission = { jobName: 'rebound', configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py' } };
  for (const host of ['evil.example', `evil.example:${port}`, `attacker.localhost.evil.example:${port}`, `192.168.1.7:${port}`]) {
    const res = await withHost(service.url, 'POST', '/api/apps/', host, submission);
    t.equal(res.status, 403, `Host ${host} refused`);
    t.match(res.json?.message, /not served/);
  }
  t.equal((await withHost(service.url, 'GET', '/api/apps/', 'evil.example')).status, 403, 'reads too');
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
    t.equal((await withHost(service.url, 'GET', '/api/apps/', host)).status, 200, `Host ${host} served`);
  }
});

t.test('the allowlist is configurable, and applies only while auth is off', async (t) => {
  const named = await startTestApi(t, { allowedHosts: ['spark.internal.example'] });
  t.equal((await named.call('GET', '/api/apps/', undefined, { host: 'spark.internal.example:8080' })).status, 200);
  t.equal((await named.call('GET', '/api/apps/', undefined, { host: 'localhost' })).status, 403);
  const withAuth = await startTestApi(t, { allowedHosts: ['localhost'], auth: { enabled: true, store: { verify: () => undefined, byId: () => undefined } } });
  t.equal((await withAuth.call('GET', '/api/apps/', undefined, { host: 'other.example' })).status, 401, 'with auth on, the key decides');
});

t.test('a `*.NAME` entry (the Spark UI host\'s applications) allows one label under NAME, not NAME itself nor deeper names', async (t) => {
  const api = await startTestApi(t, { allowedHosts: ['localhost', '*.ui.localhost:8080'] });
  const status = async (host: string) => (await api.call('GET', '/api/apps/', undefined, { host })).status;
  t.equal(await status('app-1.ui.localhost:8080'), 200, 'one label under it');
  t.equal(await status('ui.localhost'), 403, 'not the name itself');
  t.equal(await status('a.app-1.ui.localhost'), 403, 'nor two labels under it');
  t.equal(await status('evilui.localhost'), 403, 'nor a name that merely ends alike');
});
