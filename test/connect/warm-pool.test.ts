// The Connect endpoint's warm pool (connect/warm-pool.ts) on a fake clock, over a fake host whose
// servers start when the test says so: how it fills, hands a server out once and refills, replaces
// servers of an old Spark version and dead ones, backs off after failed starts, counts a server as
// ready only once its warm-up succeeded (a failed or overlong warm-up is a failed start), drains,
// and stops everything at close. Minutes pass in microseconds; nothing waits for real time.
import t, { type Test } from 'tap';
import { ConnectWarmPool, REFILL_DELAY_MS, WARM_UP_TIMEOUT_MS, type WarmPoolHost, type WarmServer } from '../../connect/warm-pool.js';
import { FakeClock } from '../gateway/fake-clock.js';
import { silentLog } from '../gateway/scripted-kernel.js';

const CHECK_MS = 5000;

interface Start { template: string | undefined; version: string; appName: string; resolve: () => void; reject: (error: Error) => void }
interface WarmUp { appName: string; signal: AbortSignal; resolve: () => void; reject: (error: Error) => void }

/** The endpoint's side: starts wait for the test; the templates' versions, dead servers and stops are recorded. */
class FakeHost implements WarmPoolHost {
  readonly starts: Start[] = [];
  readonly stopped: string[] = [];
  readonly versions = new Map<string | undefined, string | undefined>([[undefined, '3.5.7'], ['spark4', '4.2.0']]);
  readonly dead = new Set<string>();
  /** Warm-ups succeed at once, unless held: then they wait for the test (warmUps). */
  holdWarmUps = false;
  readonly warmUps: WarmUp[] = [];
  private next = 0;

  versionOf(template: string | undefined): Promise<string | undefined> { return Promise.resolve(this.versions.get(template)); }
  start(template: string | undefined, version: string, submitted?: (appName: string) => void): Promise<WarmServer> {
    const appName = `warm-${++this.next}`;
    submitted?.(appName); // as the endpoint's host: its application is submitted before its server answers
    return new Promise((resolve, reject) => {
      const server = { appName, template, version, port: 40000 + this.next, server: { host: '127.0.0.1', port: 40000 + this.next } };
      this.starts.push({ template, version, appName, resolve: () => resolve(server), reject });
    });
  }
  warmUp(server: WarmServer, signal: AbortSignal): Promise<void> {
    if (!this.holdWarmUps) return Promise.resolve();
    return new Promise((resolve, reject) => { this.warmUps.push({ appName: server.appName, signal, resolve, reject }); });
  }
  alive(server: WarmServer): Promise<boolean> { return Promise.resolve(!this.dead.has(server.appName)); }
  stop(appName: string): Promise<void> { this.stopped.push(appName); return Promise.resolve(); }
  started(): string[] { return this.starts.map((s) => s.appName); }
  /** Lets the server `appName` answer. */
  ready(...appNames: string[]): void { for (const name of appNames) this.starts.find((s) => s.appName === name)!.resolve(); }
}

/** Lets the pool's promise chains run to their end; no time passes. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((ok) => setImmediate(ok));
}

function openPool(t: Test, sizes: Array<[string | undefined, number]> = [[undefined, 2]]) {
  const clock = new FakeClock();
  const host = new FakeHost();
  const pool = new ConnectWarmPool(new Map(sizes), host, silentLog, CHECK_MS, clock);
  // As the endpoint's starts do when it stops: the ones still waiting give up.
  t.teardown(async () => {
    const closed = pool.close();
    for (const start of host.starts) start.reject(new Error('the endpoint is shutting down'));
    await closed;
  });
  pool.open();
  return { clock, host, pool };
}

/** A pool whose first server, warm-1, has answered and is being warmed up (the warm-up held for the test to end). */
async function warmingPool(t: Test, sizes: Array<[string | undefined, number]>) {
  const opened = openPool(t, sizes);
  opened.host.holdWarmUps = true;
  await flush();
  opened.host.ready('warm-1');
  await flush();
  return opened;
}

t.test('open fills the pool; a ready server is handed out once, and the pool starts another a few seconds later', async (t) => {
  const { clock, host, pool } = openPool(t);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'two servers started for a pool of two');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'none handed out before its server answers');
  host.ready('warm-1');
  await flush();
  t.same(pool.status(), [{ template: undefined, size: 2, ready: 1, starting: 1 }]);
  t.equal(pool.take('spark4', '3.5.7'), undefined, 'not to a session of another template');
  t.equal(pool.take(undefined, '4.2.0'), undefined, 'not to a session of another Spark version');
  const taken = pool.take(undefined, '3.5.7');
  t.equal(taken?.appName, 'warm-1', 'the ready server');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'never a second time: it left the pool');
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'no start beside the taken server\'s first query');
  clock.advance(REFILL_DELAY_MS - 1);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'nor until the refill\'s delay passed');
  clock.advance(1);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2', 'warm-3'], 'refilled then, without waiting for the next check');
  t.same(host.stopped, [], 'a handed-out server is not the pool\'s to stop');
});

t.test('a server given back (its claim refused before it was recorded) is the pool\'s again', async (t) => {
  const { clock, host, pool } = openPool(t, [[undefined, 1]]);
  await flush();
  host.ready('warm-1');
  await flush();
  const taken = pool.take(undefined, '3.5.7')!;
  clock.advance(REFILL_DELAY_MS);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'the refill began');
  pool.giveBack(taken);
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 1, starting: 1 }], 'one more than its size for now');
  clock.advance(CHECK_MS);
  await flush();
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 1, starting: 0 }], 'the next check drops the surplus, the starting one first');
  host.ready('warm-2');
  await flush();
  t.same(host.stopped, ['warm-2'], 'stopped once it answered');
  t.equal(pool.take(undefined, '3.5.7')?.appName, 'warm-1', 'handed out again, to the next session');
});

t.test('a changed Spark version replaces the ready servers, and a starting one once it answers', async (t) => {
  const { clock, host, pool } = openPool(t, [['spark4', 2]]);
  await flush();
  host.ready('warm-1');
  await flush();
  host.versions.set('spark4', '4.3.0');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.stopped, ['warm-1'], 'the ready server of 4.2.0 stopped');
  t.same(host.starts.slice(2).map((s) => s.version), ['4.3.0', '4.3.0'], 'two servers of the template\'s version of now');
  host.ready('warm-2');
  await flush();
  t.same(host.stopped, ['warm-1', 'warm-2'], 'the one still starting is stopped once it answers');
  t.equal(pool.take('spark4', '4.2.0'), undefined, 'the old version is never handed out');
});

t.test('a server that stops answering is replaced at the next check, not before', async (t) => {
  const { clock, host, pool } = openPool(t, [[undefined, 1]]);
  await flush();
  host.ready('warm-1');
  await flush();
  host.dead.add('warm-1');
  clock.advance(CHECK_MS - 1);
  await flush();
  t.same(host.started(), ['warm-1'], 'no check before its interval');
  clock.advance(1);
  await flush();
  t.same(host.stopped, ['warm-1'], 'the dead server stopped (its application ended)');
  t.same(host.started(), ['warm-1', 'warm-2'], 'and replaced');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'nothing handed out meanwhile');
});

t.test('a failed start is retried after a back-off that doubles, not at every check', async (t) => {
  const { clock, host } = openPool(t, [[undefined, 1]]);
  await flush();
  host.starts[0]!.reject(new Error('no Spark'));
  await flush();
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.started(), ['warm-1'], 'not retried at the next check');
  clock.advance(10_000);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'retried after 10 s');
  host.starts[1]!.reject(new Error('no Spark'));
  await flush();
  clock.advance(15_000);
  await flush();
  t.equal(host.starts.length, 2, 'the second failure waits longer');
  clock.advance(5_000);
  await flush();
  t.equal(host.starts.length, 3, 'retried after 20 s');
  host.ready('warm-3');
  await flush();
  t.same(host.stopped, [], 'a good start resets it');
});

t.test('a template that is gone drains its pool; it fills again once it is back', async (t) => {
  const { clock, host, pool } = openPool(t, [['spark4', 1]]);
  await flush();
  host.ready('warm-1');
  await flush();
  host.versions.delete('spark4');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.stopped, ['warm-1'], 'drained');
  t.same(pool.status(), [{ template: 'spark4', size: 1, ready: 0, starting: 0 }]);
  host.versions.set('spark4', '4.2.0');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'refilled once it is back');
});

t.test('close stops every server still the pool\'s, the starting ones as they answer, and its timer', async (t) => {
  const { clock, host, pool } = openPool(t);
  await flush();
  host.ready('warm-1');
  await flush();
  const closed = pool.close();
  host.ready('warm-2');
  await closed;
  t.same(host.stopped.sort(), ['warm-1', 'warm-2'], 'both stopped: none left running');
  t.equal(clock.pending, 0, 'no timer left');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'nothing handed out after close');
});

t.test('a server is not ready until its warm-up succeeded', async (t) => {
  const { host, pool } = await warmingPool(t, [[undefined, 1]]);
  t.same(host.warmUps.map((w) => w.appName), ['warm-1'], 'its warm-up began once it answered');
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 0, starting: 1 }], 'still starting while it warms up');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'not handed out before its warm-up ended');
  host.warmUps[0]!.resolve();
  await flush();
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 1, starting: 0 }], 'ready once it succeeded');
  t.equal(pool.take(undefined, '3.5.7')?.appName, 'warm-1');
  t.notOk(host.warmUps[0]!.signal.aborted, 'its warm-up was not cancelled');
});

t.test('a failing warm-up is a failed start: the server is stopped, never handed out, and the template backs off', async (t) => {
  const { clock, host, pool } = await warmingPool(t, [[undefined, 1]]);
  host.warmUps[0]!.reject(new Error('ExecutePlan answered gRPC status 13: the JVM ran out of memory'));
  await flush();
  t.same(host.stopped, ['warm-1'], 'stopped: nothing of it left running');
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 0, starting: 0 }], 'not in the pool');
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'never handed out');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.started(), ['warm-1'], 'not retried at the next check (a failed start backs off)');
  clock.advance(10_000);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'retried after the back-off');
});

t.test('a warm-up that outlasts its timeout is cancelled and is a failed start', async (t) => {
  const { clock, host, pool } = await warmingPool(t, [[undefined, 1]]);
  clock.advance(WARM_UP_TIMEOUT_MS - 1);
  await flush();
  t.same(host.stopped, [], 'not before its timeout');
  t.notOk(host.warmUps[0]!.signal.aborted);
  clock.advance(1);
  await flush();
  t.ok(host.warmUps[0]!.signal.aborted, 'its calls are cancelled');
  t.match(String(host.warmUps[0]!.signal.reason), /did not end within 300 s/, 'saying why');
  t.same(host.stopped, ['warm-1'], 'the server stopped');
  t.same(pool.status(), [{ template: undefined, size: 1, ready: 0, starting: 0 }]);
  host.warmUps[0]!.resolve(); // too late: changes nothing
  await flush();
  t.equal(pool.take(undefined, '3.5.7'), undefined, 'never handed out');
  clock.advance(10_000);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'retried after the back-off');
});

t.test('a server dropped while it warms up (its version changed) has its warm-up cancelled and is stopped, with no back-off', async (t) => {
  const { clock, host } = await warmingPool(t, [['spark4', 1]]);
  host.versions.set('spark4', '4.3.0');
  clock.advance(CHECK_MS);
  await flush();
  t.ok(host.warmUps[0]!.signal.aborted, 'its warm-up cancelled');
  t.same(host.stopped, ['warm-1'], 'and the server stopped');
  t.same(host.starts.map((s) => s.version), ['4.2.0', '4.3.0'], 'a server of the version of now started');
  host.starts[1]!.reject(new Error('no Spark'));
  await flush();
  clock.advance(10_000);
  await flush();
  t.equal(host.starts.length, 3, 'one failure counted, not two: the cancelled warm-up was not the server\'s failure');
});

t.test('close cancels a warm-up under way and stops its server', async (t) => {
  const { clock, host, pool } = await warmingPool(t, [[undefined, 1]]);
  await pool.close();
  t.ok(host.warmUps[0]!.signal.aborted, 'cancelled');
  t.same(host.stopped, ['warm-1'], 'stopped: none left running');
  t.equal(clock.pending, 0, 'no timer left (nor the warm-up\'s)');
});

t.test('sizes of 0 are off: no timer, no start', async (t) => {
  const { clock, host, pool } = openPool(t, [[undefined, 0]]);
  await flush();
  t.notOk(pool.enabled);
  t.equal(clock.pending, 0);
  t.same(host.started(), []);
});

t.test('the pool\'s applications (which this endpoint writes the activity of): from their submission until they leave the pool', async (t) => {
  const { clock, host, pool } = openPool(t);
  await flush();
  t.same(pool.appNames(), ['warm-1', 'warm-2'], 'starting ones: named once submitted');
  host.ready('warm-1');
  await flush();
  pool.take(undefined, '3.5.7');
  clock.advance(REFILL_DELAY_MS);
  await flush();
  t.same(pool.appNames().sort(), ['warm-2', 'warm-3'], 'a handed-out one is no longer the pool\'s; its refill is');
  host.starts.find((s) => s.appName === 'warm-2')!.reject(new Error('did not start'));
  await flush();
  t.same(pool.appNames(), ['warm-3'], 'nor a failed start');
});

t.test('a check during the refill\'s delay starts nothing; another take meanwhile does not move the delay on', async (t) => {
  const { clock, host, pool } = openPool(t, [[undefined, 2]]);
  await flush();
  host.ready('warm-1', 'warm-2');
  await flush();
  pool.take(undefined, '3.5.7');
  clock.advance(REFILL_DELAY_MS / 2);
  pool.poke(); // as the periodic check would
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'held while the taken server answers its first query');
  pool.take(undefined, '3.5.7');
  clock.advance(REFILL_DELAY_MS / 4);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2'], 'still held after the second take');
  clock.advance(REFILL_DELAY_MS / 4);
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2', 'warm-3', 'warm-4'], 'both refilled at the first take\'s delay: sessions opened faster than the delay do not starve the pool');
});

t.test('close cancels a held refill', async (t) => {
  const { clock, host, pool } = openPool(t, [[undefined, 1]]);
  await flush();
  host.ready('warm-1');
  await flush();
  pool.take(undefined, '3.5.7');
  await pool.close();
  t.equal(clock.pending, 0, 'no timer left');
  clock.advance(REFILL_DELAY_MS);
  await flush();
  t.same(host.started(), ['warm-1'], 'nothing started after close');
});

t.test('a refill delay of 0 refills at once', async (t) => {
  const clock = new FakeClock();
  const host = new FakeHost();
  const pool = new ConnectWarmPool(new Map([[undefined, 1]]), host, silentLog, CHECK_MS, clock, WARM_UP_TIMEOUT_MS, 0);
  t.teardown(async () => {
    const closed = pool.close();
    for (const start of host.starts) start.reject(new Error('the endpoint is shutting down'));
    await closed;
  });
  pool.open();
  await flush();
  host.ready('warm-1');
  await flush();
  pool.take(undefined, '3.5.7');
  await flush();
  t.same(host.started(), ['warm-1', 'warm-2']);
});
