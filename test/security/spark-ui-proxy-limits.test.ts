// The Spark UI proxy facing a driver that holds its answers (dashboard/spark-ui-limits.ts): a
// tiny Python server stands in for the driver's UI and answers /never with headers and a few
// bytes and then nothing, /drip with bytes without end, /silent with nothing at all. It writes
// "closed <path>" to its log when the proxy closes its side. Viewers that leave close the
// driver's sockets too; one key holds at most its cap of proxied requests (429), while another
// key is served; an answer is cut past its bytes and its time.
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { SparkUiLimits } from '../../dashboard/spark-ui-limits.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

// TEST DOUBLE for spark-submit: a "Spark UI" on the spark.ui.port it is given that never finishes.
const HOLDING_DRIVER = `#!/usr/bin/env python3
import sys, select, http.server
port = int(next(a.split('=', 1)[1] for a in sys.argv if a.startswith('spark.ui.port=') and a.split('=', 1)[1] != '0'))
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith('/jobs'):
            body = b'jobs'
            self.send_response(200)
            self.send_header('content-length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if self.path.startswith('/silent'):
            select.select([self.connection], [], [])
            print('closed', self.path, flush=True)
            return
        self.send_response(200)
        self.send_header('content-type', 'text/plain')
        self.end_headers()
        self.wfile.write(b'first bytes\\n')
        self.wfile.flush()
        try:
            if self.path.startswith('/drip'):
                chunk = b'x' * 65536
                while True:
                    self.wfile.write(chunk)
            # Readable only when the peer closed its side (the proxy sends nothing more).
            select.select([self.connection], [], [])
        except OSError:
            pass
        print('closed', self.path, flush=True)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler).serve_forever()
`;

interface Setup { api: TestApi; port: number; appName: string; keys: { a: string; b: string; admin: string }; driverLog: () => string }

async function holdingApp(t: Test, limits: Partial<SparkUiLimits>): Promise<Setup> {
  const root = tempDir(t);
  const sparkSubmit = join(root, 'holding-spark-submit');
  writeFileSync(sparkSubmit, HOLDING_DRIVER);
  chmodSync(sparkSubmit, 0o755);
  const store = new FileKeyStore(join(root, 'keys'));
  const keys = { a: store.create('user', 'a').key, b: store.create('user', 'b').key, admin: store.create('admin', 'admin').key };
  const api = await startTestApi(t, { auth: { enabled: true, store }, spark: { sparkSubmit }, sparkUiLimits: limits });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = api.app.server.address() as { port: number };
  const res = await api.call('POST', '/api/apps/', { jobName: 'holding', configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py' } }, { 'x-api-key': keys.a });
  t.equal(res.status, 201, `submitted: ${res.body.slice(0, 200)}`);
  const appName = res.json.appName as string;
  await waitForState(async () => (await api.call('GET', `/api/apps/${appName}`, undefined, { 'x-api-key': keys.admin })).json, 'RUNNING');
  const page = () => api.call('GET', `/dashboard/apps/${appName}/spark-ui/jobs/`, undefined, { 'x-api-key': keys.a, host: '127.0.0.1' });
  await until(async () => (await page()).status === 200, { what: 'the driver\'s UI', intervalMs: 100 });
  return { api, port, appName, keys, driverLog: () => readFileSync(join(api.dataDir, 'logs', `${appName}.log`), 'utf8') };
}

interface Viewer { request: ClientRequest; response: Promise<IncomingMessage>; ended: Promise<number>; text: () => string }

/** A viewer over a real socket: resolves with the answer's head, and `ended` with the bytes it got once the answer is over (however). */
function view(setup: Setup, path: string, key: string): Viewer {
  let received = 0;
  let text = '';
  let ended!: (bytes: number) => void;
  const endedPromise = new Promise<number>((ok) => { ended = ok; });
  let request!: ClientRequest;
  const response = new Promise<IncomingMessage>((ok, fail) => {
    request = httpRequest({ port: setup.port, host: '127.0.0.1', path: `/dashboard/apps/${setup.appName}/spark-ui${path}`, headers: { 'x-api-key': key } }, (res) => {
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (text.length < 4096) text += String(chunk);
      });
      res.on('close', () => ended(received));
      ok(res);
    });
    request.on('error', (error) => { ended(received); fail(error); });
    request.end();
  });
  response.catch(() => undefined);
  return { request, response, ended: endedPromise, text: () => text };
}

/** The whole (short) answer of a viewer. */
const body = async (viewer: Viewer) => {
  await viewer.ended;
  return viewer.text();
};
const closedCount = (setup: Setup, path: string) => setup.driverLog().split('\n').filter((line) => line === `closed ${path}`).length;

t.test('viewers that leave close the driver\'s sockets; one key holds at most its cap, another is served', { timeout: 180_000 }, async (t) => {
  const setup = await holdingApp(t, { requestsPerKey: 4, answerMs: 0, answerBytes: 0 });
  const viewers = Array.from({ length: 4 }, () => view(setup, '/never', setup.keys.a));
  for (const viewer of viewers) t.equal((await viewer.response).statusCode, 200, 'the driver\'s answer began');

  const over = view(setup, '/jobs/', setup.keys.a);
  t.equal((await over.response).statusCode, 429, 'a fifth request of the same key is refused');
  t.match(JSON.parse(await body(over)), { statusCode: 429, message: /At most 4 Spark UI requests/ });
  const admin = view(setup, '/jobs/', setup.keys.admin);
  t.equal((await admin.response).statusCode, 200, 'another key is served meanwhile');
  await body(admin);

  for (const viewer of viewers) viewer.request.destroy();
  // Before the fix the driver's side stayed open for good: 907 of 1,024 descriptors in the probe.
  await until(() => closedCount(setup, '/never') === 4, { what: 'the driver\'s four sockets closed', timeoutMs: 60_000 });
  t.equal(closedCount(setup, '/never'), 4, 'every upstream request ended with its viewer');
  await until(async () => {
    const again = view(setup, '/jobs/', setup.keys.a);
    await body(again);
    return (await again.response).statusCode === 200;
  }, { what: 'the key served again', intervalMs: 100 });
  t.pass('the key is served again once its viewers left');
});

t.test('an answer is cut past its bytes and past its time', { timeout: 180_000 }, async (t) => {
  const setup = await holdingApp(t, { requestsPerKey: 8, answerMs: 3000, answerBytes: 1024 * 1024 });
  const drip = view(setup, '/drip', setup.keys.a);
  t.equal((await drip.response).statusCode, 200);
  const dripped = await drip.ended;
  t.ok(dripped <= 1024 * 1024 + 256 * 1024, `the endless answer was cut after ${dripped} bytes (cap: 1 MiB)`);
  await until(() => closedCount(setup, '/drip') === 1, { what: 'the driver\'s drip socket closed', timeoutMs: 60_000 });

  const never = view(setup, '/never', setup.keys.a);
  t.equal((await never.response).statusCode, 200);
  await never.ended;
  await until(() => closedCount(setup, '/never') === 1, { what: 'the driver\'s socket closed', timeoutMs: 60_000 });
  t.pass('an answer that never ends is cut, and the driver\'s socket with it');

  const silent = view(setup, '/silent', setup.keys.a);
  t.equal((await silent.response).statusCode, 504, 'a driver that never answers: 504');
  t.match(JSON.parse(await body(silent)), { statusCode: 504, error: 'Gateway Timeout' });
});
