// The warm pool's loop (gateway/warm-pool.ts) on a fake clock, over a fake registry whose kernels
// are plain objects: how it fills, refills at its checks, hands out, replaces and drains, and
// that its checks never overlap. Minutes pass in microseconds; nothing waits for real time.
import t, { type Test } from 'tap';
import type { KernelSession } from '../../gateway/kernel-session.js';
import { type PoolHost, WarmPool } from '../../gateway/warm-pool.js';
import { FakeClock } from '../gateway/fake-clock.js';
import { silentLog } from '../gateway/scripted-kernel.js';

const CHECK_MS = 5000;

/** A pool kernel as the pool reads it: claimable once `ready`, claimed by claimIt. */
class FakeKernel {
  claim: 'unclaimed' | 'claimed' = 'unclaimed';
  executionState = 'starting';
  sparkBroken = false;
  owner: string | undefined;
  constructor(readonly id: string, readonly pool: string, readonly poolVersion: string) {}
  get unclaimed(): boolean { return this.claim === 'unclaimed'; }
  get claimable(): boolean { return this.unclaimed && this.executionState === 'idle' && !this.sparkBroken; }
  ready(): this { this.executionState = 'idle'; return this; }
  async claimIt(owner?: string): Promise<boolean> {
    if (!this.claimable) return false;
    this.claim = 'claimed';
    this.owner = owner;
    return true;
  }
}

/** The registry's side: kernels it holds, what the pool started and removed, the templates' versions. */
class FakeHost implements PoolHost {
  readonly kernels = new Map<string, FakeKernel>();
  readonly started: string[] = [];
  readonly removed: string[] = [];
  readonly versions = new Map<string, string | undefined>([['notebook', 'v1']]);
  /** Counts calls to templateVersion, to see when a check ran. */
  checks = 0;
  /** While set, a check waits on it before it reads the template (to catch two checks at once). */
  gate: Promise<void> | undefined;
  private next = 0;

  sessions(): Iterable<KernelSession> { return [...this.kernels.values()] as unknown as KernelSession[]; }
  async startPooled(template: string, version: string): Promise<KernelSession> {
    const kernel = new FakeKernel(`k${++this.next}`, template, version);
    this.kernels.set(kernel.id, kernel);
    this.started.push(kernel.id);
    return kernel as unknown as KernelSession;
  }
  async removePooled(id: string): Promise<void> {
    this.removed.push(id);
    this.kernels.get(id)!.executionState = 'dead';
    this.kernels.delete(id);
  }
  async templateVersion(template: string): Promise<string | undefined> {
    this.checks++;
    await this.gate;
    return this.versions.get(template);
  }
  all(): FakeKernel[] { return [...this.kernels.values()]; }
}

/** Lets the pool's check (a chain of promises) run to its end; no time passes. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((ok) => setImmediate(ok));
}

function openPool(t: Test, sizes: Record<string, number> = { notebook: 2 }) {
  const clock = new FakeClock();
  const host = new FakeHost();
  const pool = new WarmPool(new Map(Object.entries(sizes)), host, silentLog, CHECK_MS, clock);
  t.teardown(() => pool.close());
  return { clock, host, pool };
}

t.test('open fills the pool at once; a kernel that dies is replaced at the next check, not before', async (t) => {
  const { clock, host, pool } = openPool(t);
  pool.open();
  await flush();
  t.same(host.started, ['k1', 'k2'], 'two kernels started for a pool of two');
  t.same(pool.status(), [{ template: 'notebook', size: 2, ready: 0, starting: 2 }], 'starting, none ready yet');
  host.kernels.get('k1')!.ready();
  host.kernels.get('k2')!.executionState = 'dead';
  clock.advance(CHECK_MS - 1);
  await flush();
  t.same(host.started, ['k1', 'k2'], 'no check before its interval');
  clock.advance(1);
  await flush();
  t.same(host.started, ['k1', 'k2', 'k3'], 'the check replaced the dead kernel');
  t.same(pool.status(), [{ template: 'notebook', size: 2, ready: 1, starting: 1 }]);
  await pool.close();
  t.equal(clock.pending, 0, 'close ends its timer');
});

t.test('take hands out a ready kernel, claimed for the caller, and the pool refills without waiting for its check', async (t) => {
  const { host, pool } = openPool(t, { notebook: 1 });
  pool.open();
  await flush();
  t.equal(await pool.take('notebook', 'key-a'), undefined, 'nothing ready yet: no kernel from the pool');
  t.equal(await pool.take('other', 'key-a'), undefined, 'a template without a pool: none');
  host.kernels.get('k1')!.ready();
  const taken = await pool.take('notebook', 'key-a') as unknown as FakeKernel;
  t.equal(taken.id, 'k1');
  t.equal(taken.owner, 'key-a', "claimed for the caller's key");
  await flush();
  t.same(host.started, ['k1', 'k2'], 'refilled at once');
  t.same(pool.status(), [{ template: 'notebook', size: 1, ready: 0, starting: 1 }], 'the claimed kernel is no longer the pool\'s');
});

t.test('a changed template replaces the waiting kernels; one whose Spark failed is replaced too', async (t) => {
  const { clock, host, pool } = openPool(t);
  pool.open();
  await flush();
  host.all().forEach((k) => k.ready());
  host.kernels.get('k1')!.sparkBroken = true;
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.removed, ['k1'], 'the broken one removed');
  t.same(host.started, ['k1', 'k2', 'k3'], 'and replaced');
  host.versions.set('notebook', 'v2');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.removed, ['k1', 'k2', 'k3'], 'both kernels of the old config removed');
  t.same(host.all().map((k) => k.poolVersion), ['v2', 'v2'], 'the pool holds kernels of the config of now');
});

t.test('a template that is gone drains its pool; it fills again once the template is back', async (t) => {
  const { clock, host, pool } = openPool(t);
  pool.open();
  await flush();
  host.versions.set('notebook', undefined);
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.removed, ['k1', 'k2'], 'drained');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.started, ['k1', 'k2'], 'not refilled while the template is missing');
  host.versions.set('notebook', 'v1');
  clock.advance(CHECK_MS);
  await flush();
  t.same(host.started, ['k1', 'k2', 'k3', 'k4'], 'refilled once it is back');
});

t.test('checks never overlap: pokes during a check make one more check after it', async (t) => {
  const { host, pool } = openPool(t, { notebook: 1 });
  let release: () => void = () => {};
  host.gate = new Promise((ok) => { release = ok; });
  pool.open();
  await flush();
  t.equal(host.checks, 1, 'the first check waits on the template');
  pool.poke();
  pool.poke();
  await flush();
  t.equal(host.checks, 1, 'no second check while the first runs');
  host.gate = undefined;
  release();
  await flush();
  t.equal(host.checks, 2, 'one more check after it, for both pokes');
  t.same(host.started, ['k1'], 'and the second check found the pool full');
});

t.test('a pool of size 0 is off: no timer, no check', async (t) => {
  const { clock, host, pool } = openPool(t, { notebook: 0 });
  t.notOk(pool.enabled);
  pool.open();
  await flush();
  t.equal(clock.pending, 0);
  t.equal(host.checks, 0);
});
