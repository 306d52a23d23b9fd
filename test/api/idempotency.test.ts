// POST /api/apps/ with an Idempotency-Key (submit-api/idempotency.ts), local mode: repeats answer
// the first application, a race makes one, another body is refused, the window ends it.
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { bodyFingerprint, parseIdempotencyKey, parseIdempotencyWindow } from '../../submit-api/idempotency.js';

const body = (lines = 1) => ({ jobName: 'idem', configOverrides: fakeJob({ lines }), labels: { team: 'data' } });
const keyed = (key: string) => ({ 'idempotency-key': key });

t.test('50 parallel submissions with one key make exactly one application, answered to all', async (t) => {
  const api = await startTestApi(t);
  const answers = await Promise.all(Array.from({ length: 50 }, () => api.call('POST', '/api/apps/', body(), keyed('"race-1"'))));
  const statuses = answers.map((a) => a.status).sort();
  t.same(statuses, [...Array(49).fill(200), 201].sort(), 'one 201 (the run), 49 replays with 200');
  t.equal(new Set(answers.map((a) => a.json.appName)).size, 1, 'every answer names the same application');
  const { items } = (await api.call('GET', '/api/apps/')).json;
  t.equal(items.length, 1, 'one application is listed');
  t.equal(items[0].jobName, 'idem');
  t.same(items[0].labels, { team: 'data' });
});

t.test('the same key with the same body later answers the same application with 200', async (t) => {
  const api = await startTestApi(t);
  const first = await api.call('POST', '/api/apps/', body(), keyed('"8e03978e-40d5-43e8-bc93-6894a57f9324"'));
  t.equal(first.status, 201);
  // The body's key order does not matter (canonical JSON); a bare (unquoted) key is the same key.
  const reordered = { labels: { team: 'data' }, configOverrides: fakeJob({ lines: 1 }), jobName: 'idem' };
  const again = await api.call('POST', '/api/apps/', reordered, keyed('8e03978e-40d5-43e8-bc93-6894a57f9324'));
  t.equal(again.status, 200);
  t.equal(again.json.appName, first.json.appName);
  t.equal(again.json.createdAt, first.json.createdAt);
  t.equal((await api.call('GET', '/api/apps/')).json.items.length, 1);
});

t.test('the same key with another body answers 422 and creates nothing', async (t) => {
  const api = await startTestApi(t);
  const first = await api.call('POST', '/api/apps/', body(1), keyed('"k-other"'));
  t.equal(first.status, 201);
  const other = await api.call('POST', '/api/apps/', body(2), keyed('"k-other"'));
  t.equal(other.status, 422);
  t.equal(other.json.code, 'IDEMPOTENCY_KEY_REUSED');
  t.match(other.json.message, /another request body/);
  t.equal((await api.call('GET', '/api/apps/')).json.items.length, 1);
});

t.test('keys are separate: another key makes another application; no key, always a new one', async (t) => {
  const api = await startTestApi(t);
  const a = await api.call('POST', '/api/apps/', body(), keyed('"one"'));
  const b = await api.call('POST', '/api/apps/', body(), keyed('"two"'));
  const c = await api.call('POST', '/api/apps/', body());
  const d = await api.call('POST', '/api/apps/', body());
  t.same([a.status, b.status, c.status, d.status], [201, 201, 201, 201]);
  t.equal(new Set([a, b, c, d].map((r) => r.json.appName)).size, 4);
});

t.test('a key is scoped to the API key that sends it: another caller\'s same key is its own', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const api = await startTestApi(t, { auth: { enabled: true, store: keys } });
  const [alice, bob] = [keys.create('user', 'alice'), keys.create('user', 'bob')];
  const as = (who: { key: string }) => ({ 'x-api-key': who.key, 'idempotency-key': '"shared"' });
  const first = await api.call('POST', '/api/apps/', body(1), as(alice));
  t.equal(first.status, 201);
  const other = await api.call('POST', '/api/apps/', body(2), as(bob));
  t.equal(other.status, 201, 'bob\'s request with another body is not refused as a reuse of alice\'s key');
  t.not(other.json.appName, first.json.appName);
  const again = await api.call('POST', '/api/apps/', body(1), as(bob));
  t.equal(again.status, 422, 'bob\'s own key, now with another body than his first');
  t.equal(again.json.code, 'IDEMPOTENCY_KEY_REUSED');
  t.equal((await api.call('POST', '/api/apps/', body(1), as(alice))).json.appName, first.json.appName, 'alice still gets hers');
});

t.test('a malformed key answers 400 with the header as the field', async (t) => {
  const api = await startTestApi(t);
  for (const bad of ['"unterminated', '"a" "b"', 'two words', '"a", "b"', '""', `"${'x'.repeat(256)}"`]) {
    const res = await api.call('POST', '/api/apps/', body(), keyed(bad));
    t.equal(res.status, 400, `${bad.slice(0, 20)}: 400`);
    t.equal(res.json.field, 'Idempotency-Key');
  }
  t.same((await api.call('GET', '/api/apps/')).json.items, [], 'nothing created');
});

t.test('after the window the same key makes a new application', async (t) => {
  const windowMs = 30;
  const api = await startTestApi(t, { idempotencyWindowMs: windowMs });
  const first = await api.call('POST', '/api/apps/', body(), keyed('"windowed"'));
  t.equal(first.status, 201);
  await until(() => Date.now() - Date.parse(first.json.createdAt) > windowMs, { what: 'the window to pass' });
  const later = await api.call('POST', '/api/apps/', body(), keyed('"windowed"'));
  t.equal(later.status, 201, 'a new run');
  t.not(later.json.appName, first.json.appName);
  t.equal((await api.call('GET', `/api/apps/${first.json.appName}`)).status, 200, 'the first run is still there');
});

t.test('the key is kept on disk: a restarted service still answers the first application', async (t) => {
  const first = await startTestApi(t);
  const made = await first.call('POST', '/api/apps/', body(), keyed('"restart"'));
  t.equal(made.status, 201);
  await first.app.close();
  await first.cluster.close();
  const second = await startTestApi(t, { dataDir: first.dataDir });
  const again = await second.call('POST', '/api/apps/', body(), keyed('"restart"'));
  t.equal(again.status, 200);
  t.equal(again.json.appName, made.json.appName);
  t.equal((await second.call('POST', '/api/apps/', body(2), keyed('"restart"'))).status, 422);
});

t.test('a dry run with a key creates nothing and takes no key', async (t) => {
  const api = await startTestApi(t);
  const dry = await api.call('POST', '/api/apps/?dryRun=true', body(), keyed('"dry"'));
  t.equal(dry.status, 200);
  const real = await api.call('POST', '/api/apps/', body(2), keyed('"dry"'));
  t.equal(real.status, 201, 'the key is still free for another body');
});

t.test('header parsing and fingerprints', async (t) => {
  t.equal(parseIdempotencyKey(undefined), undefined);
  t.equal(parseIdempotencyKey('"a\\"b\\\\c"'), 'a"b\\c', 'sf-string escapes');
  t.equal(parseIdempotencyKey('abc-123'), 'abc-123');
  t.throws(() => parseIdempotencyKey(['"a"', '"b"']), /more than once/);
  t.equal(bodyFingerprint({ jobName: 'a', labels: { x: '1', y: '2' } }), bodyFingerprint({ labels: { y: '2', x: '1' }, jobName: 'a' }));
  t.not(bodyFingerprint({ jobName: 'a' }), bodyFingerprint({ jobName: 'b' }));
  t.equal(parseIdempotencyWindow('24h'), 86_400_000);
  t.equal(parseIdempotencyWindow('90'), 90_000);
  t.throws(() => parseIdempotencyWindow('0'));
  t.throws(() => parseIdempotencyWindow('soon'));
});
