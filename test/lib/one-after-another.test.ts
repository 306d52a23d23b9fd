// lib/one-after-another.ts: calls run in their order, never two at once, each with its own
// result; a failure is its caller's and the next call still runs; idle waits for all of them.
import t from 'tap';
import { oneAfterAnother } from '../../lib/one-after-another.js';

/** A promise the test settles by hand: no timers, so the order is the test's alone. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((ok, fail) => { resolve = ok; reject = fail; });
  return { promise, resolve, reject };
}

t.test('a call starts only once the one before has settled; each gets its own result', async (t) => {
  const started: string[] = [];
  const gates = new Map([['a', deferred<string>()], ['b', deferred<string>()]]);
  const run = oneAfterAnother((name: string) => { started.push(name); return gates.get(name)!.promise; });
  const a = run('a');
  const b = run('b');
  await new Promise((ok) => setImmediate(ok));
  t.same(started, ['a'], 'b waits while a runs');
  gates.get('a')!.resolve('a done');
  t.equal(await a, 'a done');
  await new Promise((ok) => setImmediate(ok));
  t.same(started, ['a', 'b'], 'b starts after a');
  gates.get('b')!.resolve('b done');
  t.equal(await b, 'b done');
});

t.test('a failed call rejects its own caller only, and the next call runs', async (t) => {
  const first = deferred<number>();
  let calls = 0;
  const run = oneAfterAnother(() => (++calls === 1 ? first.promise : Promise.resolve(calls)));
  const failing = run();
  const next = run();
  first.reject(new Error('unreadable'));
  await t.rejects(failing, { message: 'unreadable' });
  t.equal(await next, 2);
});

t.test('a call made while one runs is not joined to it: it runs again, after it', async (t) => {
  const gate = deferred<void>();
  let runs = 0;
  const run = oneAfterAnother(async () => { runs++; if (runs === 1) await gate.promise; return runs; });
  const one = run();
  const two = run();
  gate.resolve();
  t.same([await one, await two], [1, 2]);
});

t.test('idle resolves once every call made so far has settled, failed or not', async (t) => {
  const gates = [deferred<void>(), deferred<void>()];
  let i = 0;
  const run = oneAfterAnother(() => gates[i++].promise);
  const calls = [run().catch(() => undefined), run()];
  let idle = false;
  const waiting = run.idle().then(() => { idle = true; });
  gates[0].reject(new Error('x'));
  await calls[0];
  await new Promise((ok) => setImmediate(ok));
  t.equal(idle, false, 'the second call still runs');
  gates[1].resolve();
  await waiting;
  t.equal(idle, true);
  await run.idle(); // with nothing under way, at once
});
