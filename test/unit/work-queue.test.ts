// The controller's work queue (cluster/kubernetes/work-queue.ts), without a cluster: client-go's
// guarantees (dedup, one worker per key, requeue after done), per-key backoff with jitter and a
// cap, the overall token bucket on top of it, and shutdown. Timers are a fake clock: nothing here waits.
import t from 'tap';
import { backoffDelay, type Timers, TokenBucket, WorkQueue } from '../../cluster/kubernetes/work-queue.js';

/** A fake clock: timers run when `advance` passes their time. */
function fakeTimers() {
  let now = 0;
  let next = 0;
  const pending = new Map<number, { at: number; run: () => void }>();
  const timers: Timers = {
    set: (run, ms) => { const id = next++; pending.set(id, { at: now + ms, run }); return id; },
    clear: (handle) => { pending.delete(handle as number); },
  };
  return {
    timers,
    now: () => now,
    pending: () => [...pending.values()].map((p) => p.at - now).sort((a, b) => a - b),
    advance(ms: number) {
      now += ms;
      for (const [id, p] of [...pending.entries()].sort((a, b) => a[1].at - b[1].at)) {
        if (p.at <= now) { pending.delete(id); p.run(); }
      }
    },
  };
}

t.test('a key added many times while it waits is handed out once', async (t) => {
  const queue = new WorkQueue<string>();
  for (let i = 0; i < 5; i++) { queue.add('a'); queue.add('b'); }
  t.equal(queue.length, 2);
  t.equal(await queue.get(), 'a');
  t.equal(await queue.get(), 'b', 'in the order first added');
  t.equal(queue.length, 0);
});

t.test('a key being processed is never handed to a second worker; added meanwhile, it comes back after done', async (t) => {
  const queue = new WorkQueue<string>();
  queue.add('a');
  const first = await queue.get();
  t.equal(first, 'a');
  queue.add('a');
  queue.add('a');
  t.equal(queue.length, 0, 'not queued while a worker holds it');
  let second: string | undefined;
  const waiting = queue.get().then((k) => { second = k; });
  await Promise.resolve();
  t.equal(second, undefined, 'a second worker gets nothing');
  queue.done('a');
  await waiting;
  t.equal(second, 'a', 'queued again once, after done');
  queue.done('a');
  t.equal(queue.length, 0, 'and not again: the burst collapsed into one more pass');
  t.notOk(queue.busy);
});

t.test('concurrent workers never hold the same key at once', async (t) => {
  const queue = new WorkQueue<string>();
  const holding = new Set<string>();
  let overlaps = 0;
  let passes = 0;
  const worker = async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      if (holding.has(key)) overlaps++;
      holding.add(key);
      passes++;
      await new Promise((ok) => setImmediate(ok));
      if (passes < 200) queue.add(key); // an event for the same key while it is processed
      holding.delete(key);
      queue.done(key);
    }
  };
  const workers = [worker(), worker(), worker(), worker()];
  for (const key of ['a', 'b', 'a', 'c', 'a', 'b']) queue.add(key);
  while (passes < 200) await new Promise((ok) => setImmediate(ok));
  queue.shutDown();
  await Promise.all(workers);
  t.equal(overlaps, 0, `no overlap in ${passes} passes by 4 workers`);
});

t.test('addRateLimited: per key, doubling from the base, capped, jittered; forget resets', async (t) => {
  const clock = fakeTimers();
  const queue = new WorkQueue<string>({ timers: clock.timers, now: clock.now, baseMs: 100, maxMs: 1000, jitter: 0, random: () => 0.5 });
  const delays = [1, 2, 3, 4, 5, 6].map(() => {
    const ms = queue.addRateLimited('a');
    clock.advance(ms);
    return ms;
  });
  t.same(delays, [100, 200, 400, 800, 1000, 1000], 'doubling, then capped');
  t.equal(queue.retries('a'), 6);
  t.equal(queue.addRateLimited('b'), 100, 'another key has its own backoff');
  queue.forget('a');
  t.equal(queue.addRateLimited('a'), 100, 'after a success, from the base again');
});

t.test('a rate-limited key is queued only once its delay has passed', async (t) => {
  const clock = fakeTimers();
  const queue = new WorkQueue<string>({ timers: clock.timers, now: clock.now, baseMs: 100, jitter: 0 });
  queue.addRateLimited('a');
  t.equal(queue.length, 0);
  t.ok(queue.busy, 'a delayed key keeps the queue busy');
  clock.advance(99);
  t.equal(queue.length, 0, 'not before');
  clock.advance(1);
  t.equal(queue.length, 1, 'then queued');
  t.equal(await queue.get(), 'a');
});

t.test('addAfter: the sooner of two delays wins', async (t) => {
  const clock = fakeTimers();
  const queue = new WorkQueue<string>({ timers: clock.timers, now: clock.now });
  queue.addAfter('a', 5000);
  queue.addAfter('a', 200);
  queue.addAfter('a', 3000);
  t.same(clock.pending(), [200], 'one timer, the soonest');
  clock.advance(200);
  t.equal(queue.length, 1);
});

t.test('jitter spreads the delays below the exponential figure', async (t) => {
  t.equal(backoffDelay(3, { baseMs: 100, jitter: 0.5, random: () => 0 }), 800, 'random 0: the full delay');
  t.equal(backoffDelay(3, { baseMs: 100, jitter: 0.5, random: () => 0.999999 }), 400, 'random near 1: half of it');
  t.equal(backoffDelay(60, { baseMs: 100, maxMs: 60_000, jitter: 0 }), 60_000, 'a long run of failures stays at the cap');
});

t.test('shutDown answers waiting workers, drops the queue and its timers', async (t) => {
  const clock = fakeTimers();
  const queue = new WorkQueue<string>({ timers: clock.timers, now: clock.now });
  const waiting = queue.get();
  queue.addAfter('later', 1000);
  queue.shutDown();
  t.equal(await waiting, undefined);
  t.same(clock.pending(), [], 'no timer left');
  queue.add('x');
  t.equal(await queue.get(), undefined, 'nothing after shutdown');
  t.equal(queue.length, 0);
});

t.test('the token bucket: a burst passes at once, then one token per 1/qps', async (t) => {
  const bucket = new TokenBucket({ qps: 10, burst: 3 });
  t.same([bucket.reserve(0), bucket.reserve(0), bucket.reserve(0)], [0, 0, 0], 'the burst');
  t.equal(bucket.reserve(0), 100, 'the fourth waits one token (100 ms at 10/s)');
  t.equal(bucket.reserve(0), 200, 'the fifth two');
  t.equal(bucket.reserve(1_000), 0, 'a second later the bucket has refilled (to its burst, not beyond)');
  t.same([bucket.reserve(1_000), bucket.reserve(1_000)], [0, 0]);
  t.equal(bucket.reserve(1_000), 100, 'burst exhausted again');
});

t.test('addRateLimited waits for the longer of the key\'s backoff and the overall bucket', async (t) => {
  const clock = fakeTimers();
  const queue = new WorkQueue<string>({ timers: clock.timers, now: clock.now, baseMs: 5, jitter: 0, bucket: { qps: 10, burst: 2 } });
  const delays = ['a', 'b', 'c', 'd'].map((key) => queue.addRateLimited(key));
  t.same(delays, [5, 5, 100, 200], 'two within the burst wait their 5 ms backoff; the others wait for tokens');
  clock.advance(5);
  t.equal(queue.length, 2, 'a and b after their backoff');
  clock.advance(95);
  t.equal(queue.length, 3, 'c after its token');
  clock.advance(100);
  t.equal(queue.length, 4, 'd after the next');
  t.equal(queue.addRateLimited('a'), 100, 'a failing again: the bucket is one token short (100 ms), longer than a\'s own 10 ms');
  clock.advance(10_000);
  t.equal(queue.addRateLimited('a'), 20, 'the bucket refilled: a\'s own backoff (5 ms doubled twice) counts again');
});
