// The leader's part of "a key per application" with test doubles for the cache, the store and the
// apiserver: a key and its Secret when an application is first seen, once; revoked before its
// log is moved once it ended; a new leader keeps a running driver's key and finishes what the
// last one left of an application deleted meanwhile; a follower does nothing.
import t from 'tap';
import type { EventLogKeys } from '../../cluster/history/event-log-keys.js';
import type { ObjectStore } from '../../cluster/history/object-store.js';
import type { AppCache } from '../../cluster/kubernetes/app-cache.js';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { EventLogAccess } from '../../cluster/kubernetes/event-log-access.js';

interface World {
  apps: Map<string, string>; // appName -> state
  secrets: Set<string>;
  granted: Set<string>;
  folders: Set<string>;
  calls: string[];
  leader: boolean;
}

function access(world: World): EventLogAccess {
  const cache = {
    names: () => [...world.apps.keys()],
    application: (name: string) => (world.apps.has(name) ? { metadata: { name, uid: `uid-${name}` } } : undefined),
    get: (name: string) => (world.apps.has(name) ? { state: world.apps.get(name) } : undefined),
  } as unknown as AppCache;
  const keys: EventLogKeys = {
    perApplication: true,
    grant: async (name, prefix) => { world.calls.push(`grant ${name} ${prefix}`); world.granted.add(name); return { accessKeyId: `ss-${name}`, secretAccessKey: 's' }; },
    revoke: async (name) => { world.calls.push(`revoke ${name}`); world.granted.delete(name); },
    granted: async () => [...world.granted],
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
  });
}

const world = (apps: [string, string][] = []): World => ({ apps: new Map(apps), secrets: new Set(), granted: new Set(), folders: new Set(), calls: [], leader: true });

t.test('first seen: a folder, a key and its Secret, once; ended: revoked, then moved, then the folder deleted', async (t) => {
  const w = world([['a-1', 'PENDING']]);
  const controller = access(w);
  controller.startedLeading();
  controller.touch('a-1');
  await controller.idle();
  t.same(w.calls, ['grant a-1 in/a-1', 'secret a-1-event-log'], 'granted once, however often touched');
  t.ok(w.folders.has('a-1'), 'its folder exists before the driver writes');
  w.apps.set('a-1', 'COMPLETED');
  controller.touch('a-1');
  controller.touch('a-1');
  await controller.idle();
  t.same(w.calls.slice(2), ['revoke a-1', 'remove in/a-1/'], 'revoked first, then the (empty) folder removed; once');
});

t.test('a new leader keeps a running driver\'s key and finishes what the last one left', async (t) => {
  const w = world([['run-1', 'RUNNING'], ['done-1', 'FAILED']]);
  w.granted.add('run-1').add('done-1').add('gone-1');
  w.secrets.add('run-1-event-log').add('done-1-event-log');
  w.folders.add('run-1').add('done-1').add('gone-1').add('cut-1');
  const controller = access(w);
  controller.startedLeading();
  await new Promise((ok) => setImmediate(ok));
  await controller.idle();
  t.notOk(w.calls.some((c) => c.includes('run-1')), 'the running driver keeps its key (a new one would cut it off)');
  for (const name of ['done-1', 'gone-1']) t.ok(w.calls.includes(`revoke ${name}`) && w.calls.includes(`remove in/${name}/`), `${name}: revoked and its folder removed`);
  t.ok(w.calls.includes('remove in/cut-1/'), 'a folder whose collection was cut short is finished too');
  t.same([...w.granted], ['run-1'], 'only the running application has rights left');
});

t.test('a follower does nothing', async (t) => {
  const w = world([['a-1', 'PENDING']]);
  w.leader = false;
  const controller = access(w);
  controller.touch('a-1');
  await controller.idle();
  t.same(w.calls, []);
});
