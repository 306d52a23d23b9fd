// Revoking a key ends what it holds open at once: against the real `submission-service local
// --auth on`, key A follows the events stream and holds a notebook websocket; `keys revoke` (the
// CLI, another process, as an operator runs it) closes both, while key B's stream carries on.
// Drivers are the fake-spark-submit TEST DOUBLE, and the kernel's driver a stand-in `python` that
// only waits (local mode starts a kernel's Python first): it never becomes a kernel, but the
// gateway's websocket to it is real, which is what is tested here.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { type ServerEvent, serverEvents } from '../../lib/server-events.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { until } from '../helpers/poll.js';
import { http, runCli, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

function follow(base: string, key: string) {
  const events: ServerEvent[] = [];
  const abort = new AbortController();
  const state = { ended: false };
  void (async () => {
    const response = await fetch(`${base}/api/apps/events`, { headers: { 'x-api-key': key }, signal: abort.signal });
    for await (const event of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) events.push(event);
  })().catch(() => undefined).finally(() => { state.ended = true; });
  return { events, state, stop: () => abort.abort() };
}

t.test('keys revoke closes the key\'s event stream and notebook websocket at once', { timeout: 120_000 }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const venv = writeFakeSparkEnv(root);
  writeFileSync(join(venv, 'bin', 'python'), '#!/bin/sh\n# TEST DOUBLE: a kernel driver that stays up and does nothing\nexec sleep 120\n', { mode: 0o755 });
  const env: NodeJS.ProcessEnv = { ...sparkEnv(), SUBMISSION_SERVICE_PYTHON_ENV: venv };
  const create = async (label: string) => {
    const created = await runCli(['keys', 'create', '--role', 'user', '--label', label, '--data-dir', dataDir], env);
    t.equal(created.code, 0, created.stderr);
    return { key: created.stdout.trim(), id: /Created user key ([0-9a-f]+)\./.exec(created.stderr)?.[1] ?? '' };
  };
  const { key: a, id: aId } = await create('A');
  const { key: b } = await create('B');
  t.ok(aId, 'A\'s id, as keys create says it');
  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--cores', '2'] });

  const aStream = follow(service.url, a);
  const bStream = follow(service.url, b);
  t.teardown(() => { aStream.stop(); bStream.stop(); });
  await until(() => [aStream, bStream].every((s) => s.events.some((e) => e.event === 'ready')), { what: 'both streams', timeoutMs: 30_000 });

  const kernel = await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'default' }, { authorization: `token ${a}` });
  t.equal(kernel.status, 201, kernel.text);
  const ws = new WebSocket(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${kernel.json.id}/channels?session_id=s1`, { headers: { authorization: `token ${a}` } });
  const closed = new Promise<number>((ok) => ws.once('close', (code) => ok(code)));
  ws.on('error', () => undefined);
  await new Promise<void>((ok, fail) => { ws.once('open', () => ok()); ws.once('unexpected-response', (_req, res) => fail(new Error(`upgrade answered ${res.statusCode}`))); });

  const revoked = await runCli(['keys', 'revoke', aId, '--data-dir', dataDir], env);
  t.equal(revoked.code, 0, revoked.stderr);
  t.equal(await closed, 1008, 'A\'s websocket is closed with Policy Violation');
  await until(() => aStream.state.ended, { what: 'A\'s event stream to end', timeoutMs: 30_000 });
  t.pass('A\'s event stream ended');

  const submitted = await http(service.url, 'POST', '/api/apps/', { jobName: 'after', configOverrides: { type: 'Python', mainApplicationFile: 'local:///x.py' } }, { 'x-api-key': b });
  t.equal(submitted.status, 201, submitted.text);
  await until(() => bStream.events.some((e) => e.event === 'changed' && JSON.parse(e.data).appName === submitted.json.appName), { what: 'B\'s stream to carry on', timeoutMs: 30_000 });
  t.notOk(bStream.state.ended, 'B\'s stream is still open');
  const again = await http(service.url, 'GET', '/api/apps/', undefined, { 'x-api-key': a });
  t.equal(again.status, 401, 'and A is refused from now on');
});
