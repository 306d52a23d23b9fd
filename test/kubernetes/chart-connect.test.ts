// Runs alone (scripts/test.sh): the real node is one per machine; the chart's pods and a Spark
// Connect server's driver share two cores.
//
// Spark Connect through the INSTALLED chart (issue 24, Kubernetes mode): Spark's own thin client
// (pyspark-client 4.2.0) connects over TLS to the chart's Connect Service, trusting the CA of the
// certificate Secret the api filled; the session is an application of the caller's template whose
// driver pod runs Spark 4.2.0's Connect server on the real node, and `spark.range(10).count()`
// answers through the api's relay. A second key naming the first's session is refused
// PERMISSION_DENIED, and the first's session goes on. The client reaches the Service's ClusterIP
// through a local TCP forward, as `kubectl port-forward` would, so that it names `localhost`,
// one of the certificate's names.
import { writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import { APPS, chartNodeUnavailable, installChart, NS, post, send as call } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { SPARK_RUNTIME_IMAGE } from '../helpers/spark-node.js';
import { tempDir } from '../helpers/temp.js';
import { connectClientPython, runConnectClientOf } from '../connect/connect-client.js';

const python = connectClientPython('4.2.0');
const skip = chartNodeUnavailable() || (python ? false : 'no pyspark-client 4.2.0 virtualenv (SETUP_TEST_TOOLS=1 scripts/setup.sh)');

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

t.test('a Spark 4.2.0 Connect session through the chart\'s Service, with a key; another key is refused it', { skip }, async (t) => {
  const started = Date.now();
  const small = { requests: { cpu: '10m', memory: '128Mi' }, limits: { memory: '512Mi' } };
  const { bed, keys, admin, accepted, base, agent } = await installChart(t, {
    nodePool: true,
    values: {
      images: { '3.5.7': SPARK_RUNTIME_IMAGE, '4.2.0': SPARK_4_IMAGE },
      notebookService: { enabled: false },
      api: { replicas: 1, resources: small },
      webhook: { replicas: 1, resources: small },
    },
  });
  const { core } = bed;
  const alice = await keys.create('user', 'chart-connect test: a Connect session');
  const bob = await keys.create('user', 'chart-connect test: another user');
  await accepted(alice.key);
  await accepted(bob.key);
  // The template users name in their connection string: Spark 4.2.0, sized for a two-core node.
  const template = await post(agent, base, '/api/config-templates/', admin.key, { name: 'spark4', config: { engineVersion: '4.2.0', executor: { cores: 1, instances: 1 } } });
  t.equal(template.status, 201, JSON.stringify(template.json));

  // The client trusts the CA the api wrote into the chart's Secret.
  const secret = await eventually(() => core.readNamespacedSecret({ name: 'submission-service-connect-cert', namespace: NS }), (s) => Boolean(s.data?.['ca.crt']),
    { what: 'the api to fill the Connect certificate Secret', timeoutMs: 120_000 });
  const caFile = join(tempDir(t, 'chart-connect-'), 'connect-ca.pem');
  writeFileSync(caFile, Buffer.from(secret.data!['ca.crt']!, 'base64'));
  const service = await core.readNamespacedService({ name: 'submission-service-connect', namespace: NS });
  const port = await forward(t, service.spec!.clusterIP!, 15002);
  const env = { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: caFile };
  const url = (key: string, extra = '') => `sc://localhost:${port}/;use_ssl=true;token=${key};template=spark4${extra}`;

  const first = await runConnectClientOf('4.2.0', 'count', url(alice.key), env);
  t.equal(first.count, 10, `spark.range(10).count() through the endpoint: ${JSON.stringify(first)}`);
  t.equal(first.version, '4.2.0', 'answered by Spark 4.2.0\'s Connect server');
  const sessionId = String(first.session);

  // The session is an application of alice's, its driver a pod on the real node.
  const listed = await call(agent, base, 'GET', '/api/apps/', alice.key);
  const apps = ((listed.json as { items?: Array<{ appName: string; labels?: Record<string, string> }> }).items ?? []);
  const app = apps.find((a) => a.labels?.[CONNECT_SESSION_LABEL] === sessionId);
  t.ok(app, `the session ${sessionId} is listed as alice's application`);
  const driver = await core.readNamespacedPod({ name: app!.appName, namespace: APPS });
  t.equal(driver.spec?.nodeName, bed.node.name, 'its driver runs on the real node');
  t.equal(driver.spec?.containers[0].image, SPARK_4_IMAGE, 'with the Spark 4.2.0 image');

  const refused = await runConnectClientOf('4.2.0', 'status', url(bob.key, `;session_id=${sessionId}`), env);
  t.equal(refused.status, 'PERMISSION_DENIED', `bob is refused alice's session: ${String(refused.message).slice(0, 300)}`);
  const none = await runConnectClientOf('4.2.0', 'status', url('ssk_not_a_key', `;session_id=${sessionId}`), env);
  t.equal(none.status, 'UNAUTHENTICATED', 'an unknown key is refused');
  const again = await runConnectClientOf('4.2.0', 'status', url(alice.key, `;session_id=${sessionId}`), env);
  t.equal(again.status, 'OK', 'alice\'s session goes on (the refusals had no side effect)');
  // Listing shows every key's applications (the default policy lets users see them): count by session and submitter.
  const after = await call(agent, base, 'GET', '/api/apps/', admin.key);
  const ofSession = ((after.json as { items?: Array<{ labels?: Record<string, string>; submittedBy?: string }> }).items ?? []).filter((a) => a.labels?.[CONNECT_SESSION_LABEL] === sessionId);
  t.same(ofSession.map((a) => a.submittedBy), [alice.id], 'one application of that session, alice\'s: bob\'s refused call submitted none');

  // Stopping the application ends the session.
  t.equal((await call(agent, base, 'POST', `/api/apps/${app!.appName}/stop`, alice.key)).status, 200, 'the owner stops the session\'s application');
  process.stderr.write(`chart-connect: whole test ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});
