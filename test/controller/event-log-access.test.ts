// The leader's part of "a key per application" with test doubles for the cache, the store and the
// apiserver: a key and its Secret when an application is first seen, once; revoked before its
// log is moved once it ended; a new leader keeps a running driver's key and finishes what the
// last one left of an application deleted meanwhile; a follower does nothing. A controller of
// the manager: driven here through its registration, with a fake clock for its retries.
import t from 'tap';
import type { EventLogKeys } from '../../cluster/history/event-log-keys.js';
import type { ObjectStore } from '../../cluster/history/object-store.js';
import type { AppCache } from '../../cluster/kubernetes/app-cache.js';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { EventLogAccess } from '../../cluster/kubernetes/event-log-access.js';
import { installFakeClock } from '../unit/fixtures/fake-clock.js';

interface World {
  apps: Map<string, string>; // appName -> state
  secrets: Set<string>;
  granted: Set<string>;
  folders: Set<string>;
  calls: string[];
  leader: boolean;
  /** The store fails this many more calls to list the policy's grants. */
  grantedFailures?: number;
}

function access(world: World, now?: () => number): EventLogAccess {
  const cache = {
    names: () => [...world.apps.keys()],
    application: (name: string) => (world.apps.has(name) ? { metadata: { name, uid: `uid-${name}` } } : undefined),
    get: (name: string) => (world.apps.has(name) ? { state: world.apps.get(name) } : undefined),
  } as unknown as AppCache;
  const keys: EventLogKeys = {
    perApplication: true,
    grant: async (name, prefix) => { world.calls.push(`grant ${name} ${prefix}`); world.granted.add(name); return { accessKeyId: `ss-${name}`, secretAccessKey: 's' }; },
    revoke: async (name) => { world.calls.push(`revoke ${name}`); world.granted.delete(name); },
    granted: async () => {
      if (world.grantedFailures) { world.grantedFailures--; throw new Error('store unreachable'); }
      return [...world.granted];
    },
  };
  const store = {
    ensureFolder: async (prefix: string) => { world.folders.add(prefix.split('/').pop()!); },
    async *list(prefix: string, recursive = true) {
      if (!recursive && prefix === 'in/') for (const folder of world.folders) yield { prefix: `in/${folder}/` };
    },
    removePrefix: async (prefix: string) => { world.calls.push(`remove ${prefix}`); world.folders.delete(prefix.split('/')[1]!); return 0; },
  } as unknown as ObjectStore;
  const core = {
    createNamespacedSecret: async ({ body, dryRun }: { body: { metadata: { name: string } }; dryRun?: string }) => {
      if (world.secrets.has(body.metadata.name)) throw Object.assign(new Error('exists'), { code: 409 });
      if (!dryRun) { world.calls.push(`secret ${body.metadata.name}`); world.secrets.add(body.metadata.name); }
      return body;
    },
  };
  return new EventLogAccess({
    clients: { core } as unknown as KubeClients, namespace: 'apps', cache, keys, store,
    incomingPrefix: 'in', eventLogPrefix: 'events', isLeader: () => world.leader, log: (m) => world.calls.push(`log ${m}`),
    queue: { jitter: 0, ...(now ? { now } : {}) },
  });
}

/** What the manager does when this replica starts leading. */
function lead(controller: EventLogAccess): void {
  controller.controller.activate();
  controller.registration.onStartedLeading?.();
}

/** An application changed: what the manager queues. */
function touch(controller: EventLogAccess, appName: string): void {
  for (const key of controller.registration.application?.(appName) ?? []) controller.controller.enqueue(key);
}

async function idle(controller: EventLogAccess): Promise<void> {
  await controller.loaded();
  await controller.controller.drained();
}

const world = (apps: [string, string][] = []): World => ({ apps: new Map(apps), secrets: new Set(), granted: new Set(), folders: new Set(), calls: [], leader: true });

t.test('first seen: a folder, a key and its Secret, once; ended: revoked, then moved, then the folder deleted', async (t) => {
  const w = world([['a-1', 'PENDING']]);
  const controller = access(w);
  t.teardown(() => controller.controller.deactivate());
  lead(controller);
  touch(controller, 'a-1');
  await idle(controller);
  t.same(w.calls, ['grant a-1 in/a-1', 'secret a-1-event-log'], 'granted once, however often touched');
  t.ok(w.folders.has('a-1'), 'its folder exists before the driver writes');
  w.apps.set('a-1', 'COMPLETED');
  touch(controller, 'a-1');
  touch(controller, 'a-1');
  await idle(controller);
  t.same(w.calls.slice(2), ['revoke a-1', 'remove in/a-1/'], 'revoked first, then the (empty) folder removed; once');
});

t.test('a new leader keeps a running driver\'s key and finishes what the last one left', async (t) => {
  const w = world([['run-1', 'RUNNING'], ['done-1', 'FAILED']]);
  w.granted.add('run-1').add('done-1').add('gone-1');
  w.secrets.add('run-1-event-log').add('done-1-event-log');
  w.folders.add('run-1').add('done-1').add('gone-1').add('cut-1');
  const controller = access(w);
  t.teardown(() => controller.controller.deactivate());
  lead(controller);
  await idle(controller);
  t.notOk(w.calls.some((c) => c.includes('run-1')), 'the running driver keeps its key (a new one would cut it off)');
  for (const name of ['done-1', 'gone-1']) t.ok(w.calls.includes(`revoke ${name}`) && w.calls.includes(`remove in/${name}/`), `${name}: revoked and its folder removed`);
  t.ok(w.calls.includes('remove in/cut-1/'), 'a folder whose collection was cut short is finished too');
  t.same([...w.granted], ['run-1'], 'only the running application has rights left');
});

t.test('a follower does nothing', async (t) => {
  const w = world([['a-1', 'PENDING']]);
  w.leader = false;
  const controller = access(w);
  touch(controller, 'a-1');
  await idle(controller);
  t.same(w.calls, [], 'not leading: nothing queued, nothing done');
  w.leader = false;
  lead(controller); // leading as far as the manager knew, but the Lease is lost before the pass
  t.teardown(() => controller.controller.deactivate());
  await idle(controller);
  t.same(w.calls.filter((c) => !c.startsWith('log')), [], 'a pass checks that it still leads before anything');
});

t.test('a failed step is tried again after its backoff (fake clock), not at once and not lost', async (t) => {
  const clock = installFakeClock();
  const w = world([['a-1', 'PENDING']]);
  w.grantedFailures = 2;
  const controller = access(w, clock.now);
  t.teardown(() => { controller.controller.deactivate(); clock.restore(); });
  lead(controller);
  await clock.settle();
  t.notOk(w.calls.some((c) => c.startsWith('grant')), 'the store could not be read: nothing granted yet');
  t.match(w.calls.join('\n'), /application a-1: its event-log key \(tried again in 1 s\): store unreachable/, 'the first retry after 1 s');
  await clock.advance(999);
  t.notOk(w.calls.some((c) => c.startsWith('grant')), 'not before its backoff');
  await clock.advance(1);
  t.match(w.calls.join('\n'), /tried again in 2 s/, 'failed again: the next after 2 s');
  await clock.advance(2_000);
  t.same(w.calls.filter((c) => !c.startsWith('log')), ['grant a-1 in/a-1', 'secret a-1-event-log'], 'the third try grants, once');
});
