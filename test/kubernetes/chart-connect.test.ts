// Runs alone (scripts/test.sh): the real node is one per machine; the chart's pods and a Spark
// Connect server's driver share two cores.
//
// Spark Connect through the INSTALLED chart (issues 24 and 25, Kubernetes mode): Spark's own
// clients connect over TLS to the chart's Connect Service, trusting the CA of the certificate
// Secret the api filled; a session is an application of the caller's template whose driver pod
// runs that template's Spark's Connect server on the real node, and `spark.range(10).count()`
// answers through the api's relay. Spark 4.2.0 (pyspark-client 4.2.0): a second key naming the
// first's session is refused PERMISSION_DENIED, and the first's session goes on. Spark 3.5.7
// (pyspark[connect] 3.5.7): the driver takes Spark's server and the service's gate from its
// image (images/build.sh; no spark.jars.packages), and straight to the driver pod's 15002 from the
// host a call with no token or a wrong one is refused UNAUTHENTICATED (the gate: no NetworkPolicy
// is enforced here), one with the server's own token answered. The client reaches the Service's
// ClusterIP through a local TCP forward, as `kubectl port-forward` would, so that it names
// `localhost`, one of the certificate's names.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Agent } from 'node:http';
import { CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import { CONNECT_GATE_CLASS, CONNECT_INTERCEPTORS_CONF, connectTokenSecretName, IMAGE_CONNECT_DIR } from '../../domain/index.js';
import { APPS, chartNodeUnavailable, type InstalledChart, installChart, NS, post, send as call } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { SPARK_RUNTIME_IMAGE } from '../helpers/spark-node.js';
import { tempDir } from '../helpers/temp.js';
import { connectClientPython, runConnectClientOf, serverTokenParam } from '../connect/connect-client.js';

const skip = chartNodeUnavailable()
  || (connectClientPython('4.2.0') && connectClientPython('3.5.7') ? false : 'no pyspark-client 4.2.0 or pyspark[connect] 3.5.7 virtualenv (SETUP_TEST_TOOLS=1 scripts/setup.sh)');

// A cold image build alone takes tens of minutes on two busy cores.
t.setTimeout(120 * 60_000);

const SPARK_4_IMAGE = 'localhost/submission-service/spark:4.2.0';

/** A loopback port whose connections go to `host:port` (the Service's ClusterIP, through kube-proxy's rules). */
async function forward(t: { teardown(fn: () => unknown): void }, host: string, port: number): Promise<number> {
  const server = createServer((client) => {
    const upstream = tcpConnect({ host, port });
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

interface Connected {
  chart: InstalledChart & { admin: { key: string } };
  alice: { key: string; id: string };
  bob: { key: string; id: string };
  /** The session URL through the chart's Service for `key`, a template and more parameters. */
  url: (key: string, template: string, extra?: string) => string;
  env: Record<string, string>;
}

/** The chart installed with both versions' images, two users, a template per version, and the way to its Connect Service. */
async function connected(t: Test): Promise<Connected> {
  const small = { requests: { cpu: '10m', memory: '128Mi' }, limits: { memory: '512Mi' } };
  // The api relays both sessions while two drivers start beside it: a 10m request would give it
  // a 46th of a driver's CPU share on the loaded node, too little to answer its liveness probe
  // (1 s) in time, and a restarted api forgets the sessions it was starting.
  const api = { ...small, requests: { cpu: '250m', memory: '128Mi' } };
  const chart = await installChart(t, {
    nodePool: true,
    values: {
      images: { '3.5.7': SPARK_RUNTIME_IMAGE, '4.2.0': SPARK_4_IMAGE },
      notebookService: { enabled: false },
      api: { replicas: 1, resources: api },
      webhook: { replicas: 1, resources: small },
    },
  });
  const { keys, admin, accepted, base, agent, bed: { core } } = chart;
  const alice = await keys.create('user', 'chart-connect test: a Connect session');
  const bob = await keys.create('user', 'chart-connect test: another user');
  await accepted(alice.key);
  await accepted(bob.key);
  // The templates users name in their connection string, sized for a two-core node: both
  // sessions run at once, so each executor asks a small CPU request (a driver's 460m and an
  // executor's default 600m, twice, is more than the node's two cores; both would not be placed).
  for (const [name, engineVersion] of [['spark4', '4.2.0'], ['spark35', '3.5.7']]) {
    const template = await post(agent, base, '/api/config-templates/', admin.key, { name, config: { engineVersion, executor: { cores: 1, instances: 1, coreRequest: '300m' } } });
    t.equal(template.status, 201, JSON.stringify(template.json));
  }
  // The client trusts the CA the api wrote into the chart's Secret.
  const secret = await eventually(() => core.readNamespacedSecret({ name: 'submission-service-connect-cert', namespace: NS }), (s) => Boolean(s.data?.['ca.crt']),
    { what: 'the api to fill the Connect certificate Secret', timeoutMs: 120_000 });
  const caFile = join(tempDir(t, 'chart-connect-'), 'connect-ca.pem');
  writeFileSync(caFile, Buffer.from(secret.data!['ca.crt']!, 'base64'));
  const service = await core.readNamespacedService({ name: 'submission-service-connect', namespace: NS });
  const port = await forward(t, service.spec!.clusterIP!, 15002);
  const url = (key: string, template: string, extra = '') => `sc://localhost:${port}/;use_ssl=true;token=${key};template=${template}${extra}`;
  return { chart, alice, bob, url, env: { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: caFile } };
}

/** The application of session `sessionId` among `key`'s listing. */
async function sessionApp(agent: Agent, base: URL, key: string, sessionId: string): Promise<{ appName: string } | undefined> {
  const listed = await call(agent, base, 'GET', '/api/apps/', key);
  return ((listed.json as { items?: Array<{ appName: string; labels?: Record<string, string> }> }).items ?? []).find((a) => a.labels?.[CONNECT_SESSION_LABEL] === sessionId);
}

/**
 * What a failed first session's error lacks (the client shows only its last retry's status, "has
 * ended"): each Connect session application of `key` with its state and how it ended, and the
 * release's pods (a restarted api forgets its sessions) with the end of their logs. Never throws:
 * a failed listing (no answer at all) is said as such, and the client's own error still shows.
 */
async function sessionAppsEnded({ bed, agent, base }: InstalledChart, key: string): Promise<string> {
  type Item = { appName: string; state: string; stateDetail?: string; labels?: Record<string, string> };
  const listed = await call(agent, base, 'GET', '/api/apps/', key);
  const items = (listed.json as { items?: Item[] } | undefined)?.items;
  const apps = items ? JSON.stringify(items.filter((a) => a.labels?.[CONNECT_SESSION_LABEL]).map(({ appName, state, stateDetail }) => ({ appName, state, stateDetail })))
    : `no listing (${listed.status}: ${String(listed.text ?? '').slice(0, 300)})`;
  const pods = await bed.core.listNamespacedPod({ namespace: NS }).then((list) => list.items, () => []);
  const described = await Promise.all(pods.map(async (pod) => {
    const name = pod.metadata!.name!;
    const ends = (pod.status?.containerStatuses ?? []).map((c) => `${c.name} restarts ${c.restartCount}${c.lastState?.terminated ? ` (last ${c.lastState.terminated.reason}, exit ${c.lastState.terminated.exitCode})` : ''}`);
    const log = await bed.core.readNamespacedPodLog({ name, namespace: NS, tailLines: 15 }).catch((error: Error) => `(no log: ${error.message})`);
    return `${name}: ${pod.status?.phase}; ${ends.join(', ')}\n${log}`;
  }));
  return `${apps}\n\nthe release's pods:\n${described.join('\n')}`;
}

/**
 * alice's first session of `version` through the endpoint (`spark.range(10).count()` from the
 * template `template`): answered by that version's server, listed as alice's application, its
 * driver a pod with `image`.
 */
async function firstSession(t: Test, { chart, alice, url, env }: Connected, version: string, template: string, image: string) {
  const { bed, base, agent } = chart;
  const first = await runConnectClientOf(version, 'count', url(alice.key, template), env).catch(async (error: Error) => {
    const why = await sessionAppsEnded(chart, alice.key).catch((e: Error) => `(${e.message})`);
    throw new Error(`${error.message.slice(0, 4000)}\n\nthe sessions' applications: ${why}`);
  });
  t.equal(first.count, 10, `spark.range(10).count() through the endpoint: ${JSON.stringify(first)}`);
  t.equal(first.version, version, `answered by Spark ${version}'s Connect server`);
  const sessionId = String(first.session);
  const app = await sessionApp(agent, base, alice.key, sessionId);
  t.ok(app, `the session ${sessionId} is listed as alice's application`);
  const driver = await bed.core.readNamespacedPod({ name: app!.appName, namespace: APPS });
  t.equal(driver.spec?.containers[0].image, image, `with the Spark ${version} image`);
  return { sessionId, app, driver };
}

// jobs: 2: the two versions' sessions at once, their drivers side by side on the node (each
// subtest's output comes whole when it ends); the JVMs' starts overlap instead of queueing.
t.test('Spark Connect sessions through the chart\'s Service', { skip, jobs: 2 }, async (t) => {
  const started = Date.now();
  const ready = await connected(t);
  await Promise.all([
    t.test('Spark 4.2.0, with a key; another key is refused it', (t) => spark4Session(t, ready)),
    t.test('Spark 3.5.7, its server gated from its image: straight to its pod, refused without its token', (t) => spark35Session(t, ready)),
  ]);
  const restarts = (await ready.chart.bed.core.listNamespacedPod({ namespace: NS })).items.map((p) => `${p.metadata?.name} ${p.status?.containerStatuses?.map((c) => c.restartCount).join('/')}`);
  t.comment(`the release's pods' restarts: ${restarts.join(', ')}`);
  process.stderr.write(`chart-connect: whole test ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});

async function spark4Session(t: Test, ready: Connected): Promise<void> {
  const { chart, alice, bob, url, env } = ready;
  const { bed, admin, base, agent } = chart;
  const { sessionId, app, driver } = await firstSession(t, ready, '4.2.0', 'spark4', SPARK_4_IMAGE);
  t.equal(driver.spec?.nodeName, bed.node.name, 'its driver runs on the real node');

  const refused = await runConnectClientOf('4.2.0', 'status', url(bob.key, 'spark4', `;session_id=${sessionId}`), env);
  t.equal(refused.status, 'PERMISSION_DENIED', `bob is refused alice's session: ${String(refused.message).slice(0, 300)}`);
  const none = await runConnectClientOf('4.2.0', 'status', url('ssk_not_a_key', 'spark4', `;session_id=${sessionId}`), env);
  t.equal(none.status, 'UNAUTHENTICATED', 'an unknown key is refused');
  const again = await runConnectClientOf('4.2.0', 'status', url(alice.key, 'spark4', `;session_id=${sessionId}`), env);
  t.equal(again.status, 'OK', 'alice\'s session goes on (the refusals had no side effect)');
  // Listing shows every key's applications (the default policy lets users see them): count by session and submitter.
  const after = await call(agent, base, 'GET', '/api/apps/', admin.key);
  const ofSession = ((after.json as { items?: Array<{ labels?: Record<string, string>; submittedBy?: string }> }).items ?? []).filter((a) => a.labels?.[CONNECT_SESSION_LABEL] === sessionId);
  t.same(ofSession.map((a) => a.submittedBy), [alice.id], 'one application of that session, alice\'s: bob\'s refused call submitted none');

  // Stopping the application ends the session (and frees the node).
  t.equal((await call(agent, base, 'POST', `/api/apps/${app!.appName}/stop`, alice.key)).status, 200, 'the owner stops the session\'s application');
}

async function spark35Session(t: Test, ready: Connected): Promise<void> {
  const { chart, alice, url, env } = ready;
  const { bed, base, agent } = chart;
  const { sessionId, app, driver } = await firstSession(t, ready, '3.5.7', 'spark35', SPARK_RUNTIME_IMAGE);
  const args = driver.spec?.containers[0].args ?? [];
  t.notOk(args.some((arg) => arg.includes('spark.jars.packages')), 'its driver resolves nothing at start: no spark.jars.packages');
  t.ok(args.includes(`spark.jars=local://${IMAGE_CONNECT_DIR}/connect-gate.jar,local://${IMAGE_CONNECT_DIR}/spark-connect.jar`), `the image's jars, the gate first: ${args.join(' ')}`);
  t.ok(args.includes(`${CONNECT_INTERCEPTORS_CONF}=${CONNECT_GATE_CLASS}`), 'the gate among the interceptors');

  // Straight to the server on the pod's IP from the host: 3.5 listens on every interface.
  const direct = (param: string, session = sessionId) => runConnectClientOf('3.5.7', 'status', `sc://${driver.status!.podIP!}:15002/${param};session_id=${session}`);
  for (const [what, param] of [['no token', ''], ['a wrong token', serverTokenParam('3.5.7', 'f'.repeat(64))]]) {
    const refused = await direct(param);
    t.equal(refused.status, 'UNAUTHENTICATED', `straight to the driver pod with ${what}: ${String(refused.message ?? refused.status).slice(0, 300)}`);
  }
  const secret = await bed.core.readNamespacedSecret({ name: connectTokenSecretName(app!.appName), namespace: APPS });
  const token = Buffer.from(secret.data!.token!, 'base64').toString('utf8');
  t.equal((await direct(serverTokenParam('3.5.7', token), randomUUID())).status, 'OK', 'with the server\'s own token (what the relay sends): answered');
  const again = await runConnectClientOf('3.5.7', 'status', url(alice.key, 'spark35', `;session_id=${sessionId}`), env);
  t.equal(again.status, 'OK', 'the session goes on through the endpoint');
  t.equal((await call(agent, base, 'POST', `/api/apps/${app!.appName}/stop`, alice.key)).status, 200, 'the owner stops the session\'s application');
}
