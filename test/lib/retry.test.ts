// lib/retry.ts: runs again only on the errors it is told to, as many times as allowed,
// waits between runs, and stops when aborted.
import t from 'tap';
import { backoff, retry } from '../../lib/retry.js';

class Conflict extends Error {}

t.test('retries the transient error until it succeeds', async (t) => {
  const seen: number[] = [];
  const value = await retry(async (attempt) => {
    seen.push(attempt);
    if (attempt < 3) throw new Conflict('409');
    return 'written';
  }, { attempts: 5, retryOn: (e) => e instanceof Conflict, delayMs: () => 1 });
  t.equal(value, 'written');
  t.same(seen, [1, 2, 3]);
});

t.test('throws the last error once the attempts are spent', async (t) => {
  let runs = 0;
  await t.rejects(retry(async () => { runs++; throw new Conflict(`conflict ${runs}`); }, { attempts: 4, delayMs: () => 0 }), { message: 'conflict 4' });
  t.equal(runs, 4);
});

t.test('any other error is thrown at once, as it came', async (t) => {
  let runs = 0;
  const forbidden = new Error('403');
  await t.rejects(retry(async () => { runs++; throw forbidden; }, { retryOn: (e) => e instanceof Conflict, delayMs: () => 0 }), forbidden);
  t.equal(runs, 1);
});

t.test('waits between runs; an abort ends the wait', async (t) => {
  const started = Date.now();
  await retry(async (attempt) => { if (attempt === 1) throw new Conflict('x'); }, { delayMs: () => 50 });
  t.ok(Date.now() - started >= 45, 'waited the delay');
  const abort = new AbortController();
  setTimeout(() => abort.abort(new Error('shutting down')), 30);
  const begun = Date.now();
  await t.rejects(retry(async () => { throw new Conflict('x'); }, { attempts: 100, delayMs: () => 3_600_000, signal: abort.signal }), { message: 'shutting down' });
  // an hour-long delay: had the abort not ended the wait, the test would time out instead of getting here
  t.comment(`the abort ended the wait after ${Date.now() - begun} ms`);
});

t.test('backoff: full jitter under an exponential, capped ceiling', async (t) => {
  const delay = backoff({ baseMs: 10, maxMs: 100 });
  for (let i = 0; i < 200; i++) {
    t.ok(delay(1) <= 10 && delay(3) <= 40 && delay(10) <= 100 && delay(2) >= 0);
  }
});
