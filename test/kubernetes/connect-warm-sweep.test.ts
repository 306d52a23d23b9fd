// Kubernetes mode (the test bed: a real apiserver, our webhook and controller; no node): a warm
// pool's server of a replica killed without a drain is swept by another replica. Two endpoints'
// sessions ("replicas") wired as cli/connect-kubernetes.ts wires them: the first keeps a warm
// pool and writes its server's activity label on its cull ticks; the second's orphan sweep keeps
// that server while the label moves, and once the first is gone (its clock stops: nothing is
// written any more) stops it, once: spec.stopRequested with the sweep's reason in spec.stopReason,
// and the controller's KILLED record says why.
// TEST DOUBLES: the kubelet (the test writes the driver pod's Running status, IP 127.0.0.1), a
// TCP listener for the pod's Connect server, a warm-up that does nothing (no Spark answers).
import { createServer, type AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { connectServers, warmVia } from '../../cli/connect-wiring.js';
import { orphanWarmWhy } from '../../connect/orphan-sweep.js';
import { podPlacement } from '../../connect/placement.js';
import { CONNECT_SESSION_LABEL, WARM_SESSION } from '../../connect/server-app.js';
import { ServiceApi } from '../../connect/service-api.js';
import { ConnectSessions, type SessionsOptions } from '../../connect/sessions.js';
import { activityOf, CONNECT_ACTIVITY_LABEL, markEvery, orphanAfter, type SharedActivity } from '../../connect/shared-activity.js';
import { FakeClock } from '../gateway/fake-clock.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;
const skip = !process.env.SUBMISSION_SERVICE_TESTBED ? 'no test bed (scripts/setup.sh)' : false;
const IDLE_MS = 60_000;

t.test('a killed replica\'s warm pool server: kept while its pool writes, then stopped once with its reason', { skip, timeout: 600_000 }, async (t) => {
  const bed = await startKubeBed(t);
  const { cluster } = bed.api;
  const { core } = bed.clients;
  const listener = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => listener.close(resolve)));
  const placement = podPlacement((listener.address() as AddressInfo).port, (appName) => cluster.driverPodIp(appName));
  // As cli/connect-kubernetes.ts wires them: the label through the cluster, read from its cache; stops with their reason.
  const activity: SharedActivity = {
    mark: (appName, at) => cluster.setLabels(appName, { [CONNECT_ACTIVITY_LABEL]: String(at) }),
    read: async (appName) => activityOf((await cluster.get(appName))?.labels),
  };
  const stops: string[] = [];
  const replica = (more: Partial<SessionsOptions>) => new ConnectSessions({
    api: new ServiceApi(() => 'http://127.0.0.1:9'), log, defaultVersion: '3.5.7', serverJars: () => undefined, idleMs: IDLE_MS, probeMs: 20,
    placement, activity, sessionClaims: async () => [],
    stopApp: (appName, why) => { stops.push(appName); return cluster.stop(appName, why); },
    ...more,
  });

  // The first replica: a pool of one, on a clock of its own; never closed (it is killed).
  const firstClock = new FakeClock(Date.now());
  replica({ clock: firstClock, warm: { ...warmVia(cluster), sizes: new Map([[undefined, 1]]), warmUp: async () => undefined } });
  const pod = await eventually(async () => (await bed.pods(`${CONNECT_SESSION_LABEL}=${WARM_SESSION}`))[0], (p) => p !== undefined, { what: 'the warm server\'s driver pod', timeoutMs: 60_000 });
  const appName = pod!.metadata!.name!;
  const now = new Date();
  pod!.status = { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }], startTime: now, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] };
  await core.replaceNamespacedPodStatus({ name: appName, namespace: bed.namespace, body: pod! });
  const application = async () => (await bed.applications()).find((a) => a.metadata.name === appName);
  /** The first replica's cull tick: its pool's server's activity label is written to the apiserver. */
  const firstTick = async () => {
    firstClock.advance(markEvery(IDLE_MS));
    await eventually(application, (a) => activityOf((a?.metadata as { labels?: Record<string, string> } | undefined)?.labels) === firstClock.now(), { what: 'the pool\'s activity label', timeoutMs: 30_000 });
  };
  await firstTick();

  // The second replica: no pool; its sweep on a clock that agrees with the first's.
  const clock = new FakeClock(firstClock.now());
  const swept = { count: 0 };
  const second = replica({ clock, connectServers: async () => { const apps = await connectServers(cluster)(); swept.count++; return apps; } });
  t.teardown(() => second.close());
  const sweepAfter = async (ms: number) => {
    const before = swept.count;
    clock.advance(ms);
    await eventually(async () => swept.count, (count) => count > before, { what: 'a sweep', timeoutMs: 30_000 });
  };
  await eventually(async () => swept.count, (count) => count > 0, { what: 'the second replica\'s first sweep', timeoutMs: 30_000 });
  for (let i = 0; i < 6; i++) {
    await firstTick();
    await sweepAfter(markEvery(IDLE_MS));
  }
  t.same(stops, [], 'an idle time and a half later, its pool alive: kept');
  t.notOk((await application())?.spec.stopRequested, 'no stop requested');

  // The first replica is gone: its clock stops, nothing writes the label any more.
  await sweepAfter(orphanAfter(IDLE_MS) - markEvery(IDLE_MS));
  t.same(stops, [], 'not yet: its last write may be late');
  await sweepAfter(2 * markEvery(IDLE_MS));
  const stopped = await eventually(application, (a) => a?.status?.state === 'KILLED', { what: 'the orphaned warm server KILLED', timeoutMs: 60_000 });
  t.same(stops, [appName], 'stopped by the second replica, once');
  t.match(stopped?.spec, { stopRequested: true, stopReason: orphanWarmWhy(IDLE_MS) }, 'the request carries the sweep\'s reason');
  t.equal(stopped?.status?.stateDetail, orphanWarmWhy(IDLE_MS), 'and the controller\'s record says it');
  await sweepAfter(markEvery(IDLE_MS));
  t.same(stops, [appName], 'later sweeps leave it alone');
});
