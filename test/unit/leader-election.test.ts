// LeaderElection (cluster/kubernetes/leader-election.ts) against an in-memory Lease store and
// a fake clock: the loop's timing (acquire, renew, the renew deadline, a follower's wait for
// an expired Lease) checked in milliseconds of fake time, with no apiserver and no real waits.
import t from 'tap';
import type { V1Lease } from '@kubernetes/client-node';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { KubeApiError } from '../../cluster/kubernetes/json-call.js';
import { LeaderElection } from '../../cluster/kubernetes/leader-election.js';
import { installFakeClock, type FakeClock } from './fixtures/fake-clock.js';

const NAMESPACE = 'spark';
const NAME = 'submission-service-controller';

/** The three Lease calls LeaderElection makes (lease-calls.ts' LeaseApi), over one stored Lease with optimistic concurrency. */
class FakeLeaseApi {
  lease?: V1Lease;
  private version = 0;
  /** While set, every call fails with it (an apiserver that stopped answering well). */
  failWith?: Error;
  readonly writes: V1Lease[] = [];

  async readNamespacedLease(_: { name: string; namespace: string }): Promise<V1Lease> {
    if (this.failWith) throw this.failWith;
    if (!this.lease) throw new KubeApiError(404, { message: 'not found' });
    return structuredClone(this.lease);
  }

  async createNamespacedLease({ body }: { namespace: string; body: V1Lease }): Promise<V1Lease> {
    if (this.failWith) throw this.failWith;
    if (this.lease) throw new KubeApiError(409, { message: 'already exists' });
    return this.store(body);
  }

  async replaceNamespacedLease({ body }: { name: string; namespace: string; body: V1Lease }): Promise<V1Lease> {
    if (this.failWith) throw this.failWith;
    if (body.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) throw new KubeApiError(409, { message: 'conflict' });
    return this.store(body);
  }

  /** Another replica's write (no conditions). */
  holdAs(holder: string, durationSeconds = 15): void {
    this.store({ metadata: { name: NAME, namespace: NAMESPACE }, spec: { holderIdentity: holder, leaseDurationSeconds: durationSeconds } });
  }

  get holder(): string | undefined {
    return this.lease?.spec?.holderIdentity;
  }

  private store(body: V1Lease): V1Lease {
    this.lease = structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
    this.writes.push(this.lease);
    return structuredClone(this.lease);
  }
}

interface Harness { api: FakeLeaseApi; clock: FakeClock; election: LeaderElection; started: number; stopped: number; stoppedAt?: number }

/** What setUp needs of a tap test. */
interface TestLike { teardown(run: () => unknown): void }

function setUp(t: TestLike, api = new FakeLeaseApi()): Harness {
  const clock = installFakeClock();
  const clients = { kc: {} } as unknown as KubeClients;
  const harness = { api, clock, started: 0, stopped: 0 } as Harness;
  harness.election = new LeaderElection({
    clients, namespace: NAMESPACE, name: NAME, identity: 'me', now: clock.now, leases: api,
    onStartedLeading: () => { harness.started++; },
    onStoppedLeading: () => { harness.stopped++; harness.stoppedAt = clock.now(); },
  });
  t.teardown(async () => {
    api.failWith = new Error('torn down');
    const stopping = harness.election.stop();
    await clock.advance(3_000);
    await stopping;
    clock.restore();
  });
  return harness;
}

t.test('a free Lease is created and held at once', async (t) => {
  const h = setUp(t);
  h.election.start();
  await h.clock.settle();
  t.equal(h.api.holder, 'me', 'the Lease names this replica');
  t.equal(h.api.lease?.spec?.leaseDurationSeconds, 15, 'with client-go\'s lease duration');
  t.ok(h.election.isLeader, 'leads');
  t.equal(h.started, 1, 'onStartedLeading ran once');
});

t.test('a released Lease (no holder) is taken without waiting', async (t) => {
  const api = new FakeLeaseApi();
  api.holdAs('');
  const h = setUp(t, api);
  h.election.start();
  await h.clock.settle();
  t.equal(h.api.holder, 'me');
  t.equal(h.api.lease?.spec?.leaseTransitions, 1, 'a change of holder is counted');
  t.ok(h.election.isLeader);
});

t.test('the leader renews every retry period and keeps leading', async (t) => {
  const h = setUp(t);
  h.election.start();
  await h.clock.settle();
  const afterAcquire = h.api.writes.length;
  let alwaysLeader = true;
  for (let i = 0; i < 30; i++) {
    await h.clock.advance(1_000);
    alwaysLeader &&= h.election.isLeader;
  }
  t.ok(alwaysLeader, 'led through 30 s, three times the renew deadline');
  const renewals = h.api.writes.length - afterAcquire;
  t.ok(renewals >= 14 && renewals <= 15, `one renewal per 2 s retry period (${renewals} in 30 s)`);
  t.ok(h.api.writes.every((lease) => lease.spec?.holderIdentity === 'me'));
  t.equal(h.started, 1, 'leadership started once');
  t.equal(h.stopped, 0, 'and never stopped');
});

t.test('a leader whose renewals fail stops leading at the renew deadline, not before', async (t) => {
  const h = setUp(t);
  h.election.start();
  await h.clock.settle();
  const acquiredAt = h.clock.now();
  h.api.failWith = new KubeApiError(500, { message: 'etcd is down' });
  await h.clock.advance(9_900);
  t.ok(h.election.isLeader, 'still leading 9.9 s after the last successful renewal');
  t.equal(h.stopped, 0);
  await h.clock.advance(200, 1);
  t.notOk(h.election.isLeader, 'no longer leading past the 10 s deadline');
  t.equal(h.stopped, 1, 'onStoppedLeading ran once');
  const late = h.stoppedAt! - acquiredAt - 10_000;
  t.ok(late >= 0 && late <= 2, `stepped down at the deadline (${late} ms after it)`);
  h.api.failWith = undefined;
  t.equal(h.api.holder, 'me', 'the Lease itself was never written by anyone else');
});

t.test('another holder\'s Lease is respected while it is renewed, and taken once it expires', async (t) => {
  const api = new FakeLeaseApi();
  api.holdAs('other');
  const h = setUp(t, api);
  h.election.start();
  await h.clock.settle();
  // The other holder renews every 2 s for 30 s: its Lease never goes 15 s unchanged.
  for (let i = 0; i < 15; i++) {
    await h.clock.advance(2_000);
    api.holdAs('other');
  }
  t.equal(api.holder, 'other', 'the renewed Lease was never taken');
  t.notOk(h.election.isLeader);
  t.equal(h.started, 0);
  // It stops renewing. This replica sees that last version at its next read (within one
  // retry period, 2-2.4 s with jitter), takes the Lease once it has stayed unchanged for the
  // lease duration since then, at its next read after that.
  const lastRenewal = h.clock.now();
  await h.clock.advance(14_900);
  t.equal(api.holder, 'other', 'not taken before the lease duration has passed');
  t.notOk(h.election.isLeader);
  while (api.holder === 'other' && h.clock.now() - lastRenewal < 25_000) await h.clock.advance(100);
  const after = h.clock.now() - lastRenewal;
  t.equal(api.holder, 'me', 'taken once it expired');
  t.ok(after >= 15_000 && after <= 15_000 + 2 * 2_400 + 100, `taken ${after} ms after the last renewal: 15 s plus at most two retry periods`);
  t.ok(h.election.isLeader);
  t.equal(api.lease?.spec?.leaseTransitions, 1);
});

t.test('a Lease whose holder wrote a shorter duration expires after that duration', async (t) => {
  const api = new FakeLeaseApi();
  api.holdAs('other', 5);
  const h = setUp(t, api);
  h.election.start();
  await h.clock.settle();
  await h.clock.advance(4_900);
  t.equal(api.holder, 'other', 'held for its own 5 s');
  await h.clock.advance(5_000);
  t.equal(api.holder, 'me', 'then taken (well before client-go\'s 15 s)');
});

t.test('a clean stop releases the Lease for a successor', async (t) => {
  const h = setUp(t);
  h.election.start();
  await h.clock.settle();
  t.ok(h.election.isLeader);
  await h.election.stop();
  t.notOk(h.election.isLeader);
  t.equal(h.stopped, 1, 'onStoppedLeading ran');
  t.equal(h.api.holder, '', 'the Lease names no holder');
  t.equal(h.api.lease?.spec?.leaseDurationSeconds, 1, 'and expires at once');
});
