// The launch timeout, in component tests without a kernel (seconds): a kernel not ready within it
// is ended and its application removed; a retried driver's new attempt (restartPolicy, issue 26)
// gets a window of its own, which starts at the attempt's due time (the retry interval after the
// attempt before ended; at once after an eviction), from the API's report of the attempt or its
// launcher connecting, and stops when it reports ready. The registry's launchers and the API's
// change feed are fed by hand, and time is a FakeClock moved by hand: nothing waits for real time.
import { EventEmitter } from 'node:events';
import t, { type Test } from 'tap';
import type { WebSocket } from 'ws';
import type { ApiApplication, ApiClient } from '../../gateway/api-client.js';
import { KERNEL_ID_LABEL } from '../../gateway/kernel-application.js';
import { KernelRegistry } from '../../gateway/kernel-registry.js';
import type { KernelSession } from '../../gateway/kernel-session.js';
import { LauncherAuth } from '../../gateway/launcher-auth.js';
import { DEFAULT_LIFECYCLE } from '../../gateway/lifecycle-limits.js';
import type { ApplicationAttempt } from '../../schemas/index.js';
import { FakeClock } from './fake-clock.js';
import { FakeLauncher, settled, silentLog } from './scripted-kernel.js';

const TIMEOUT_MS = 600_000;
const HELLO_READY = { op: 'hello', busy: false, claimed: false, confirms: true, spark: { ok: true } };

function fakeApi() {
  const removed: string[] = [];
  const feed: { send?: (type: string, app: ApiApplication) => void } = {};
  let n = 0;
  const api = {
    submit: async () => ({ appName: `kernel-${++n}`, jobName: 'kernel-default', state: 'SUBMITTED' } as ApiApplication),
    remove: async (appName: string) => { removed.push(appName); },
    list: async () => [],
    follow: async (_selector: string, onApp: (type: string, app: ApiApplication) => void) => { feed.send = onApp; },
    template: async () => undefined,
  } as unknown as ApiClient;
  return { api, removed, feed };
}

function launchingRegistry(clock: FakeClock, api: ApiClient): KernelRegistry {
  return new KernelRegistry({
    api, auth: new LauncherAuth('secret'), log: silentLog, launcherFile: 'local:///launcher.py', launcherUrl: () => 'ws://gateway',
    cullIdleSeconds: 0, lifecycle: { ...DEFAULT_LIFECYCLE, launchTimeoutMs: TIMEOUT_MS }, clock,
  });
}

/** A notebook's socket on the kernel: what it hears, as text. */
function listen(kernel: KernelSession): string[] {
  const heard: string[] = [];
  const client = Object.assign(new EventEmitter(), {
    readyState: 1, OPEN: 1, send: (text: string) => { heard.push(text); }, close: () => {}, ping: () => {}, terminate: () => {},
  });
  kernel.addClient(client as unknown as WebSocket, 'notebook');
  return heard;
}

/** The kernel's first driver got ready, then it ended (its launcher's socket closed with it). */
function firstRanAndEnded(kernel: KernelSession): void {
  const first = new FakeLauncher();
  kernel.setLauncher(first as unknown as WebSocket, 'secret');
  first.say(HELLO_READY);
  first.close();
}

/** A kernel whose first driver got ready, then whose application retried it: attempt 2's launcher connected. */
function retried(kernel: KernelSession): FakeLauncher {
  firstRanAndEnded(kernel);
  const second = new FakeLauncher();
  kernel.setLauncher(second as unknown as WebSocket, 'secret', 2);
  second.say({ ...HELLO_READY, spark: undefined });
  return second;
}

/** Attempt 1 as the API shows it once it ended at `endedAt` (clock time); `counted`: false for an eviction. */
function firstAttempt(endedAt: number, counted = true): ApplicationAttempt {
  const at = new Date(endedAt).toISOString();
  return { attempt: 1, startedAt: at, endedAt: at, exitCode: counted ? 1 : null, reason: counted ? 'Error' : 'Evicted', counted };
}

/** The change feed's news that the application started attempt 2 (PENDING: its driver is not there yet). */
function reportAttempt2(feed: ReturnType<typeof fakeApi>['feed'], kernel: KernelSession, attempts: ApplicationAttempt[], retryIntervalSeconds: number): void {
  feed.send!('changed', {
    appName: kernel.appName!, jobName: 'kernel-default', state: 'PENDING', attempt: 2, attempts,
    config: { restartPolicy: { type: 'OnFailure', retries: 3, retryIntervalSeconds } }, labels: { [KERNEL_ID_LABEL]: kernel.id },
  });
}

t.test('a kernel that does not get ready within the launch timeout is ended and its application removed', async (t) => {
  const clock = new FakeClock();
  const { api, removed } = fakeApi();
  const registry = launchingRegistry(clock, api);
  const stuck = await registry.start('default', undefined, {});
  const ready = await registry.start('default', undefined, {});
  const launcher = new FakeLauncher();
  ready.setLauncher(launcher as unknown as WebSocket, 'secret');
  launcher.say(HELLO_READY);
  clock.advance(TIMEOUT_MS - 1);
  t.same(removed, [], 'within the timeout: nothing ended');
  clock.advance(1);
  await settled(() => !registry.kernels.has(stuck.id));
  t.same(removed, [stuck.appName], "the stuck kernel's application is removed");
  t.equal(stuck.executionState, 'dead');
  t.ok(registry.kernels.has(ready.id), 'the kernel that got ready stays');
  t.equal(clock.pending, 0, 'no timer left behind');
  await registry.close();
});

t.test("a retried kernel whose new attempt's Spark never comes up is ended after the launch timeout, not left `restarting`", async (t) => {
  const clock = new FakeClock();
  const { api, removed } = fakeApi();
  const registry = launchingRegistry(clock, api);
  const stuck = await registry.start('default', undefined, {});
  const recovers = await registry.start('default', undefined, {});
  retried(stuck);
  const secondOfRecovers = retried(recovers);
  t.equal(stuck.executionState, 'restarting', 'the new attempt connected: restarting');
  const heard = listen(stuck);
  clock.advance(TIMEOUT_MS - 1);
  secondOfRecovers.say({ op: 'spark', ok: true });
  t.same(removed, [], 'within the timeout of the new attempt: nothing ended');
  t.equal(recovers.executionState, 'idle', 'the attempt whose Spark came up is back');
  clock.advance(1);
  await settled(() => !registry.kernels.has(stuck.id));
  t.same(removed, [stuck.appName], "the stuck attempt's application is removed");
  t.equal(stuck.executionState, 'dead', 'dead, as jupyter_server ends a kernel that did not start');
  t.ok(heard.some((text) => text.includes('"execution_state":"dead"')), 'the notebook hears `dead`');
  t.ok(heard.some((text) => text.includes('Attempt 2 of the kernel')), 'and why, naming the attempt');
  t.ok(registry.kernels.has(recovers.id), 'the kernel whose new attempt got ready stays');
  t.equal(clock.pending, 0, 'no timer left behind');
  await registry.close();
});

t.test('a kernel `restarting` whose application ends is dead, and its clients hear it', async (t) => {
  const clock = new FakeClock();
  const { api, removed, feed } = fakeApi();
  const registry = launchingRegistry(clock, api);
  await registry.open();
  const kernel = await registry.start('default', undefined, {});
  retried(kernel);
  t.equal(kernel.executionState, 'restarting');
  const heard = listen(kernel);
  feed.send!('changed', { appName: kernel.appName!, jobName: 'kernel-default', state: 'FAILED', stateDetail: 'attempt 2 failed', labels: { [KERNEL_ID_LABEL]: kernel.id } });
  t.equal(kernel.executionState, 'dead');
  t.notOk(registry.kernels.has(kernel.id), 'unlisted');
  t.ok(heard.some((text) => text.includes('"execution_state":"dead"')), 'the notebook hears `dead`');
  t.same(removed, [], 'the application ended by itself: nothing to remove');
  clock.advance(TIMEOUT_MS);
  t.same(removed, [], 'and no launch timeout fires later for it');
  await registry.close();
});

/** A kernel of an open registry whose first attempt ran and ended; the notebook listening. */
async function endedOnce(t: { teardown(fn: () => unknown): void }) {
  const clock = new FakeClock();
  const { api, removed, feed } = fakeApi();
  const registry = launchingRegistry(clock, api);
  t.teardown(() => registry.close());
  await registry.open();
  const kernel = await registry.start('default', undefined, {});
  firstRanAndEnded(kernel);
  return { clock, removed, feed, registry, kernel, heard: listen(kernel) };
}

/** Attempt 2's window of `endedOnce`'s kernel ran out: its application removed (`removedWhy`), dead, saying which attempt, no timer left. */
async function endedAsAttempt2(t: Test, { clock, removed, registry, kernel, heard }: Awaited<ReturnType<typeof endedOnce>>, removedWhy: string) {
  await settled(() => !registry.kernels.has(kernel.id));
  t.same(removed, [kernel.appName], removedWhy);
  t.equal(kernel.executionState, 'dead');
  t.ok(heard.some((text) => text.includes('Attempt 2 of the kernel')), 'the reason names the attempt');
  t.equal(clock.pending, 0, 'no timer left behind');
}

t.test('retry interval 0: the window of an attempt whose launcher never connects runs from the report', async (t) => {
  const once = await endedOnce(t);
  const { clock, removed, feed, kernel } = once;
  // The feed's news comes a little after the end: the attempt was due already, the window starts now.
  reportAttempt2(feed, kernel, [firstAttempt(clock.now() - 5_000)], 0);
  clock.advance(TIMEOUT_MS - 1);
  t.same(removed, [], 'within the window of attempt 2: nothing ended');
  clock.advance(1);
  await endedAsAttempt2(t, once, 'its application is removed');
});

t.test('a retry interval longer than the launch timeout: the window starts when the attempt is due', async (t) => {
  const once = await endedOnce(t);
  const { clock, removed, feed, registry, kernel } = once;
  const intervalMs = 900_000;
  // As Kubernetes mode lists it: attempt 2's own record, not started yet, already there.
  reportAttempt2(feed, kernel, [firstAttempt(clock.now()), { attempt: 2, startedAt: null, endedAt: null }], intervalMs / 1000);
  clock.advance(TIMEOUT_MS);
  t.same(removed, [], 'a launch timeout after the report: the driver is not even due, nothing ended');
  clock.advance(intervalMs - TIMEOUT_MS);
  t.same(removed, [], 'at the due time: nothing ended');
  t.ok(registry.kernels.has(kernel.id), 'the kernel is still listed');
  clock.advance(TIMEOUT_MS - 1);
  t.same(removed, [], 'due + timeout − 1 ms: nothing ended');
  t.not(kernel.executionState, 'dead');
  clock.advance(1);
  await endedAsAttempt2(t, once, 'due + timeout and no launcher came: its application is removed');
});

t.test("a retried attempt's launcher that connects and gets ready within its window stops it", async (t) => {
  const { clock, removed, feed, registry, kernel } = await endedOnce(t);
  const intervalMs = 900_000;
  reportAttempt2(feed, kernel, [firstAttempt(clock.now())], intervalMs / 1000);
  clock.advance(intervalMs + TIMEOUT_MS / 2);
  const second = new FakeLauncher();
  kernel.setLauncher(second as unknown as WebSocket, 'secret', 2);
  second.say({ ...HELLO_READY, spark: undefined });
  // The feed says the driver runs: no news of a new attempt, the window stays the one from the due time.
  feed.send!('changed', { appName: kernel.appName!, jobName: 'kernel-default', state: 'RUNNING', attempt: 2, labels: { [KERNEL_ID_LABEL]: kernel.id } });
  t.equal(kernel.executionState, 'restarting', 'connected, Spark not up yet');
  clock.advance(TIMEOUT_MS / 2 - 1);
  second.say({ op: 'spark', ok: true });
  await settled(() => kernel.executionState === 'idle');
  t.equal(clock.pending, 0, 'ready: the window stopped');
  clock.advance(TIMEOUT_MS);
  t.same(removed, [], 'nothing ended');
  t.ok(registry.kernels.has(kernel.id), 'the kernel stays');
});

t.test('an eviction (not counted) is retried at once: the window starts at the report, whatever the interval', async (t) => {
  const { clock, removed, feed, registry, kernel } = await endedOnce(t);
  reportAttempt2(feed, kernel, [firstAttempt(clock.now(), false)], 900);
  clock.advance(TIMEOUT_MS - 1);
  t.same(removed, [], 'within the window: nothing ended');
  clock.advance(1);
  await settled(() => !registry.kernels.has(kernel.id));
  t.same(removed, [kernel.appName], 'no launcher by report + timeout: its application is removed');
  t.equal(clock.pending, 0, 'no timer left behind');
});

// The gateway on another host (`--api-url`): the API stamps the attempt's end with its own clock,
// minutes off the gateway's. The window is timed from the report's arrival by the retry's delay,
// so it is the same whichever way the clocks differ, and never starts before the driver is due.
for (const [skewMs, which] of [[-5 * 60_000, 'behind'], [5 * 60_000, 'ahead of']] as const) {
  t.test(`the API's clock 5 minutes ${which} the gateway's: the window still starts one retry interval after the report`, async (t) => {
    const once = await endedOnce(t);
    const { clock, removed, feed, registry, kernel } = once;
    const intervalMs = 240_000; // shorter than the skew: read against this clock, the due time would be past (or 5 minutes off)
    // The report comes 2 s after the end, as the API's clock tells it.
    reportAttempt2(feed, kernel, [firstAttempt(clock.now() + skewMs - 2_000)], intervalMs / 1000);
    clock.advance(intervalMs + TIMEOUT_MS - 1);
    t.same(removed, [], 'report + interval + timeout − 1 ms: nothing ended');
    t.ok(registry.kernels.has(kernel.id), 'the kernel is still listed');
    clock.advance(1);
    await endedAsAttempt2(t, once, 'report + interval + timeout and no launcher came: its application is removed');
  });
}
