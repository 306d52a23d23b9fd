// Bodies nested 100,000 levels deep (auth off: every route parses them), on every route that takes JSON: a quick 400
// that says why, before anything walks the body (they answered 500 after ~0.45 s of CPU, through
// /dashboard/login too). A body nested as deep as the cap allows is judged as usual.
import { join } from 'node:path';
import t from 'tap';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/json-body.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { http, startGatewayAlone, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../gateway/jupyter.js';

const deepArray = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

async function post(base: string, path: string, body: string) {
  const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, json: await res.json().catch(() => undefined) as Record<string, unknown> | undefined };
}

t.test('the scan counts brackets outside strings only', async (t) => {
  t.equal(nestsDeeperThan(deepArray(3), 3), false);
  t.equal(nestsDeeperThan(deepArray(4), 3), true);
  t.equal(nestsDeeperThan(`{"a":"${'['.repeat(100)}"}`, 3), false, 'brackets in a string');
  t.equal(nestsDeeperThan(`{"a":"\\"${'{'.repeat(100)}"}`, 3), false, 'after an escaped quote');
  t.equal(nestsDeeperThan(`["\\\\",${deepArray(5)}]`, 3), true, 'an escaped backslash ends before the quote');
  t.equal(nestsDeeperThan('[]]]]][[[', 3), false, 'unbalanced text is left to the parser');
});

t.test('local: deep nesting is a 400 on every route that takes JSON', { timeout: 120_000 }, async (t) => {
  const root = tempDir(t);
  const service = await startService(t, {
    dataDir: join(root, 'data'),
    env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) },
  });
  const routes = ['/api/apps/', '/api/apps/?dryRun=true', '/api/config-templates/', '/dashboard/login', '/dashboard/logout', '/notebooks/api/kernels', '/api/apps/x/stop', '/notebooks/api/kernels/0f0e0d0c-0b0a-4908-8706-050403020100/restart'];
  const put = await fetch(`${service.url}/api/config-templates/x`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: deepObject(100_000) });
  t.equal(put.status, 400, 'PUT /api/config-templates/x: 400');
  for (const path of routes) {
    for (const [shape, body] of [['arrays', deepArray(100_000)], ['objects', deepObject(100_000)]] as const) {
      const res = await post(service.url, path, body);
      t.equal(res.status, 400, `${path}, ${shape}: 400`);
      t.match(String(res.json?.message), /nests deeper than 64 levels/, `${path}, ${shape}: says why`);
    }
  }
  // As deep as allowed: the login judges it (a key must be a string), nothing refuses the nesting.
  const allowed = await post(service.url, '/dashboard/login', `{"key":${deepArray(MAX_JSON_DEPTH - 1)}}`);
  t.equal(allowed.status, 400);
  t.match(String(allowed.json?.message), /key/, 'a body at the cap reaches validation');
  t.equal((await http(service.url, 'GET', '/healthz')).status, 200, 'the service answers after them');
});

t.test('gateway alone: deep nesting is a 400', { timeout: 60_000 }, async (t) => {
  const root = tempDir(t);
  const gateway = await startGatewayAlone(t, { port: await freePort(), args: ['--api-url', 'http://127.0.0.1:9', '--auth', 'off', '--data-dir', join(root, 'gateway')] });
  const res = await post(gateway.url, '/notebooks/api/kernels', deepArray(100_000));
  t.equal(res.status, 400);
  t.match(String(res.json?.message), /nests deeper than 64 levels/);
});
