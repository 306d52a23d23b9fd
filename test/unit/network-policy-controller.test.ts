// The applications' NetworkPolicy controller (cluster/kubernetes/network-policy-controller.ts)
// as a controller of the manager, with a fake cache, fake policies, a fake leader election and a
// fake clock: while leading it creates the policy of every unfinished application that has none
// (one running before the feature was turned on), leaves ended applications and present
// policies alone, brings a deleted policy back at once, retries a failed create after its
// backoff, and stops watching when the Lease is lost.
import t from 'tap';
import type { ApplicationState } from '../../schemas/index.js';
import type { NetworkPolicyJson } from '../../cluster/kubernetes/app-network-policy.js';
import { Manager } from '../../cluster/kubernetes/manager.js';
import { FakeElector } from './fixtures/fake-elector.js';
import { NetworkPolicyController, type NetworkPolicyControllerOptions, type PolicyObjects } from '../../cluster/kubernetes/network-policy-controller.js';
import { installFakeClock } from './fixtures/fake-clock.js';

/** The apiserver's policies, as the controller's watch would see them. */
class FakePolicies implements PolicyObjects {
  readonly present = new Map<string, NetworkPolicyJson>();
  readonly created: NetworkPolicyJson[] = [];
  watching = false;
  failing = 0;
  private gone?: (appName: string) => void;
  async start(gone: (appName: string) => void) { this.gone = gone; this.watching = true; }
  async stop() { this.watching = false; }
  has(name: string) { return this.present.has(name); }
  async create(policy: NetworkPolicyJson) {
    if (this.failing > 0) { this.failing--; throw new Error('apiserver unreachable'); }
    this.created.push(policy);
    this.present.set(policy.metadata.name!, policy);
  }
  /** Someone deletes an application's policy: the watch reports it. */
  delete(appName: string) {
    this.present.delete(`${appName}-pods`);
    if (this.watching) this.gone?.(appName);
  }
}

function setUp(t: { teardown(run: () => unknown): void }, apps: Record<string, ApplicationState>, withoutDriver = new Set<string>()) {
  const clock = installFakeClock();
  const policies = new FakePolicies();
  const cache = {
    names: () => Object.keys(apps),
    application: (name: string) => (apps[name] ? { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { name, uid: `uid-${name}` } } : undefined),
    get: (name: string) => (apps[name] ? { state: apps[name] } : undefined),
    driver: (name: string) => (apps[name] && !withoutDriver.has(name) ? { pod: {} } : undefined),
  } as unknown as NetworkPolicyControllerOptions['cache'];
  const logged: string[] = [];
  let elector: FakeElector | undefined;
  const manager = new Manager({ cache: { start: async () => undefined, stop: async () => undefined }, elect: (hooks) => (elector = new FakeElector(hooks)) });
  const controller = new NetworkPolicyController({
    cache, policies, isLeader: () => manager.isLeader, log: (message) => logged.push(message), resyncMs: 60_000,
    queue: { now: clock.now, baseMs: 1_000, jitter: 0 },
  });
  manager.register(controller.registration);
  t.teardown(async () => { await manager.stop(); clock.restore(); });
  return { clock, manager, policies, logged, apps, withoutDriver, elector: () => elector! };
}

t.test('the leader gives every unfinished application without one its policy, owned by the Application; ended apps and present policies are left alone', async (t) => {
  const h = setUp(t, { 'running-1': 'RUNNING', 'pending-1': 'PENDING', 'done-1': 'COMPLETED', 'failed-1': 'FAILED', 'has-1': 'RUNNING' });
  h.policies.present.set('has-1-pods', {} as NetworkPolicyJson);
  await h.manager.start();
  await h.clock.advance(5_000, 1_000);
  t.same(h.policies.created, [], 'not leading: nothing written');
  t.notOk(h.policies.watching, 'and nothing watched');
  h.elector().win();
  await h.clock.settle();
  t.ok(h.policies.watching, 'leading: the policies are watched');
  t.same(h.policies.created.map((p) => p.metadata.name).sort(), ['pending-1-pods', 'running-1-pods'], 'running before the feature: each gets its policy');
  const policy = h.policies.created.find((p) => p.metadata.name === 'running-1-pods')!;
  t.same(policy.metadata.ownerReferences, [{ apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'running-1', uid: 'uid-running-1', controller: false }], 'owned by its Application (the garbage collector removes it)');
  t.same(policy.spec.podSelector.matchLabels, policy.spec.ingress[0]!.from[0]!.podSelector.matchLabels, 'its pods admit one another');
  await h.clock.advance(60_000, 1_000);
  t.equal(h.policies.created.length, 2, 'a resync writes nothing more: every policy is there');
  t.match(h.logged.join('\n'), /running-1: its NetworkPolicy was missing; created/);
});

t.test('an application whose driver pod is not there yet is the API\'s to give its policy: the controller waits for the pod', async (t) => {
  const h = setUp(t, { 'new-1': 'PENDING' }, new Set(['new-1']));
  await h.manager.start();
  h.elector().win();
  await h.clock.advance(60_000, 1_000);
  t.same(h.policies.created, [], 'no driver yet: nothing written, even at the resync (the API creates it before the pod)');
  h.withoutDriver.delete('new-1');
  h.manager.applicationChanged('new-1');
  await h.clock.settle();
  t.same(h.policies.created.map((p) => p.metadata.name), ['new-1-pods'], 'its driver came without one (the API\'s create failed or was never made): the controller makes it');
});

t.test('a deleted policy comes back at once; one of an ended application does not', async (t) => {
  const h = setUp(t, { 'a-1': 'RUNNING', 'b-1': 'RUNNING' });
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  t.equal(h.policies.created.length, 2);
  h.policies.delete('a-1');
  await h.clock.settle();
  t.ok(h.policies.has('a-1-pods'), 'deleted: restored without waiting for the resync');
  t.equal(h.policies.created.length, 3);
  h.apps['b-1'] = 'KILLED';
  h.policies.delete('b-1');
  await h.clock.advance(60_000, 1_000);
  t.notOk(h.policies.has('b-1-pods'), 'the run ended: its policy is not made again');
  t.equal(h.policies.created.length, 3);
});

t.test('a failed create comes back after its backoff; losing the Lease stops writes and the watch', async (t) => {
  const h = setUp(t, { 'a-1': 'RUNNING' });
  h.policies.failing = 2;
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  t.equal(h.policies.created.length, 0, 'the apiserver refused it');
  t.match(h.logged.join('\n'), /application a-1: its NetworkPolicy \(tried again in 1 s\): apiserver unreachable/);
  await h.clock.advance(1_000);
  t.equal(h.policies.created.length, 0, 'again after 1 s, refused again');
  await h.clock.advance(1_900);
  t.equal(h.policies.created.length, 0, 'the second failure waits 2 s');
  await h.clock.advance(100);
  t.equal(h.policies.created.length, 1, 'and then it is made');
  h.elector().lose();
  await h.clock.settle();
  t.notOk(h.policies.watching, 'no longer leading: the watch stops');
  h.policies.delete('a-1');
  h.manager.applicationChanged('a-1');
  await h.clock.advance(120_000, 1_000);
  t.equal(h.policies.created.length, 1, 'and nothing is written');
  h.elector().win();
  await h.clock.settle();
  t.ok(h.policies.watching, 'leading again: watched again');
  t.equal(h.policies.created.length, 2, 'and what was deleted meanwhile is restored');
});
