// Local mode with `--auth on`: a request for Spark's static files without cookie or key (what a
// sandboxed Spark UI page sends) tells nothing about which applications exist and starts
// nothing (issue 25). Once reproduced on main: the proxy looked the application up first, so an
// ended run's name got Spark's script from the History Server (started for it, a JVM) and a
// made-up name got a 404 that named it.
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const skip = realSpark() ? false : 'needs the Spark virtualenv';
const ASSET = 'static/spark-dag-viz.js';

t.test('an anonymous static file answers the same for an ended run and a made-up name, and starts no History Server', { skip }, async (t) => {
  const dir = mkdtempSync('/var/tmp/subsvc-assets-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const key = new FileKeyStore(dataDir).create('user', 'alice').key;
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2'] });
  const alice = (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  const main = join(dir, 'ends.py');
  writeFileSync(main, 'from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().stop()\n', { mode: 0o644 });
  chmodSync(dir, 0o711); // the driver's user reads its main file (the data dir below stays 0700)
  const created = await alice('POST', '/api/apps/', { jobName: 'ends', configOverrides: { type: 'Python', mainApplicationFile: `local://${main}` } });
  t.equal(created.status, 201, 'the application is submitted');
  const appName = created.json.appName as string;
  await waitForState(() => alice('GET', `/api/apps/${appName}`).then((r) => r.json), 'COMPLETED', { timeoutMs: 240_000 });
  // Its run is readable from the history: the old proxy would have served it from there.
  await until(async () => (await alice('GET', `/api/apps/${appName}`)).json.sparkUi?.state === 'history', { timeoutMs: 60_000, what: 'the run in the history' });

  const anonymous = (name: string) => http(api.url, 'GET', `/dashboard/apps/${name}/spark-ui/${ASSET}`);
  const existing = await anonymous(appName);
  const madeUp = await anonymous('no-such-app-7f3a9c');
  t.equal(existing.status, madeUp.status, `the same status for both names (${existing.status}, ${madeUp.status})`);
  t.equal(existing.text, madeUp.text, 'the same body for both names');
  t.equal(existing.status, 200, 'Spark\'s own file, from the local Spark');
  t.match(existing.text, /function/, 'its script');
  t.match(existing.headers.get('content-type'), /javascript/, 'as a script');
  t.equal(existing.headers.get('cache-control'), 'public, max-age=86400', 'the browser may keep it a day');
  t.match(existing.headers.get('content-security-policy'), /^sandbox /, 'sandboxed as every proxied answer');
  t.equal(existing.headers.get('x-content-type-options'), 'nosniff');
  t.notOk(existing.text.includes(appName), 'the answer does not name the application');
  t.notOk(existsSync(join(dataDir, 'run', 'history-server.pid')), 'the History Server was not started');

  const absent = (name: string) => http(api.url, 'GET', `/dashboard/apps/${name}/spark-ui/static/no-such-file.js`);
  const missing = [await absent(appName), await absent('no-such-app-7f3a9c')];
  t.same(missing.map((r) => r.status), [404, 404], 'a file Spark does not have: 404 for both names');
  t.equal(missing[0]!.text, missing[1]!.text, 'the same 404 body for both names');
  t.equal((await http(api.url, 'GET', `/dashboard/apps/${appName}/spark-ui/jobs/`)).status, 401, 'a page still needs a sign-in');
  t.notOk(existsSync(join(dataDir, 'run', 'history-server.pid')), 'still no History Server');
});
