// The kernel registry's loops (gateway/kernel-registry.ts) on a fake clock, over a fake API and
// launchers fed by hand: idle culling (claimed kernels only, by their last activity), and the
// list's wait after a restart for launchers to say whether their pool kernel was claimed.
// The launch timeout has its own test (test/gateway/launch-timeout.test.ts). Nothing waits for real time.
import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import type { ApiApplication, ApiClient } from '../../gateway/api-client.js';
import { KERNEL_ID_LABEL, KERNEL_LABEL, KERNEL_POOL_LABEL, KernelRegistry } from '../../gateway/kernel-registry.js';
import type { KernelSession } from '../../gateway/kernel-session.js';
import { LauncherAuth } from '../../gateway/launcher-auth.js';
import { FakeClock } from '../gateway/fake-clock.js';
import { FakeLauncher, settled, silentLog } from '../gateway/scripted-kernel.js';

const ADMIN = { id: 'admin', role: 'admin' } as const;

/** The API as the registry calls it: submissions numbered, removals recorded, `running` listed. */
function fakeApi(running: ApiApplication[] = []) {
  const removed: string[] = [];
  let submitted = 0;
  const api = {
    submit: async () => ({ appName: `kernel-${++submitted}`, jobName: 'kernel-default', state: 'SUBMITTED' }),
    remove: async (appName: string) => { removed.push(appName); },
    list: async () => running,
    follow: async () => {},
    template: async () => ({ name: 'notebook', config: { pythonVersion: '3' } }),
  } as unknown as ApiClient;
  return { api, removed };
}

function openRegistry(t: Test, api: ApiClient, options: { cullIdleSeconds?: number; warmPool?: Record<string, number> } = {}) {
  const clock = new FakeClock();
  const registry = new KernelRegistry({
    api, auth: new LauncherAuth('secret'), log: silentLog, launcherFile: 'local:///launcher.py', launcherUrl: () => 'ws://gateway',
    cullIdleSeconds: options.cullIdleSeconds ?? 0, warmPool: options.warmPool, clock,
  });
  t.teardown(() => registry.close());
  return { clock, registry };
}

/** Connects a launcher to the kernel and has it say hello (Spark up, idle, and whatever `extra` says). */
function hello(session: KernelSession, extra: object = {}): void {
  const launcher = new FakeLauncher();
  session.setLauncher(launcher as unknown as WebSocket, 'secret');
  launcher.say({ op: 'hello', busy: false, confirms: true, spark: { ok: true }, ...extra });
}

t.test('idle culling ends a claimed kernel once it has been idle that long; activity postpones it; a pool kernel is spared', async (t) => {
  const { api, removed } = fakeApi();
  const { clock, registry } = openRegistry(t, api, { cullIdleSeconds: 60, warmPool: { notebook: 1 } });
  await registry.open();
  const quiet = await registry.start('default', undefined, {});
  const busy = await registry.start('default', undefined, {});
  await settled(() => registry.kernels.size === 3); // and the pool's kernel
  for (const session of registry.kernels.values()) hello(session);
  clock.advance(30_000);
  busy.lastActivity = new Date(clock.now()); // it ran a cell 30 s in
  clock.advance(44_999);
  t.same(removed, [], 'a check every 15 s; nobody idle for 60 s at the last one (60 s)');
  clock.advance(1);
  await settled(() => !registry.kernels.has(quiet.id));
  t.same(removed, [quiet.appName], 'the quiet kernel is culled at the first check past 60 s idle');
  clock.advance(15_000);
  t.ok(registry.kernels.has(busy.id), 'the one active at 30 s is idle for exactly 60 s at 90 s: kept');
  clock.advance(15_000);
  await settled(() => !registry.kernels.has(busy.id));
  t.same(removed, [quiet.appName, busy.appName], 'and culled at the next check');
  t.equal(registry.kernels.size, 1, 'the pool\'s unclaimed kernel stays, idle as long as any');
});

t.test('after a restart the list waits for the launchers to say their claims, on the clock, at most 8 s', async (t) => {
  const found = (id: string) => ({ appName: `app-${id}`, state: 'RUNNING', labels: { [KERNEL_LABEL]: 'true', [KERNEL_ID_LABEL]: id, [KERNEL_POOL_LABEL]: 'notebook' } }) as unknown as ApiApplication;
  const { api } = fakeApi([found('p1'), found('p2')]);
  const { clock, registry } = openRegistry(t, api);
  await registry.open();
  t.same([...registry.kernels.values()].map((s) => s.claim), ['unknown', 'unknown'], 'found again by label, claims not known yet');
  let listed: string[] | undefined;
  void registry.list(ADMIN).then((sessions) => { listed = sessions.map((s) => s.id); });
  hello(registry.kernels.get('p1')!, { claimed: true, owner: 'key-a' });
  await settled(() => registry.kernels.get('p1')!.claim === 'claimed');
  clock.advance(7_999);
  await new Promise((ok) => setImmediate(ok));
  t.equal(listed, undefined, 'p2 has not said yet: the list still waits');
  clock.advance(1);
  await settled(() => listed !== undefined);
  t.same(listed, ['p1', 'p2'], 'at 8 s it answers; a kernel whose claim is still unknown is listed rather than lost');
  hello(registry.kernels.get('p2')!, { claimed: false });
  t.same((await registry.list(ADMIN)).map((s) => s.id), ['p1'], 'once known unclaimed, it leaves the list at once');
});

t.test('the list answers as soon as the last claim is known, without waiting out the 8 s', async (t) => {
  const app = { appName: 'app-p1', state: 'RUNNING', labels: { [KERNEL_LABEL]: 'true', [KERNEL_ID_LABEL]: 'p1', [KERNEL_POOL_LABEL]: 'notebook' } } as unknown as ApiApplication;
  const { api } = fakeApi([app]);
  const { clock, registry } = openRegistry(t, api);
  await registry.open();
  const listing = registry.list(ADMIN);
  clock.advance(1_000);
  hello(registry.kernels.get('p1')!, { claimed: true, owner: 'key-a' });
  t.same((await listing).map((s) => s.owner), ['key-a'], 'listed with the owner its launcher said');
  t.equal(clock.pending, 0, 'the wait left no timer behind');
});
