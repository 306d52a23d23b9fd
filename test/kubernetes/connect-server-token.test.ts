// Runs alone: a real Spark 4.2.0 Connect server (FakeKubelet, a TEST DOUBLE of a kubelet, runs the
// driver pod as a local spark-submit process, resolving its secretKeyRef variables from the
// apiserver as a kubelet does).
// A Kubernetes session's own Connect server answers the api's endpoint alone (issue 25, defence in
// depth beside the NetworkPolicy): the driver pod reads its token from the `<app>-connect` Secret
// the api made before it, and the endpoint (api replica) sends it. A client that reaches the
// server's port directly, with no token, a wrong one or the owner's API key, is refused
// UNAUTHENTICATED, while the session answers through the endpoint. Before, the pod got no token
// and Spark 4's server let every such call in.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { gatewayConnectTokenKey, parseKubernetesConnectFlags, startKubernetesConnect } from '../../cli/connect-kubernetes.js';
import { SparkEnvs } from '../../cluster/local/spark-envs.js';
import { CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import { CONNECT_SERVER_TOKEN_ENV } from '../../domain/index.js';
import { freePort } from '../../lib/free-port.js';
import { buildApi } from '../../submit-api/app.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { connectClientPython, runConnectClientOf } from '../connect/connect-client.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';
import { realSpark } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;
const base = realSpark();
const spark4 = base && await new SparkEnvs({ base }).ready('4.2.0');
const skip = !spark4 ? 'needs the Spark 4.2.0 virtualenv (made by local mode\'s first 4.2.0 run, or scripts/setup.sh)'
  : !connectClientPython('4.2.0') ? 'needs the 4.2 Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

t.test('a Kubernetes session\'s Spark 4 server refuses every caller but the endpoint', { skip, timeout: 900_000 }, async (t) => {
  const key = gatewayConnectTokenKey('connect-token-test-gateway-secret');
  const bed = await startKubeBed(t, { api: { connectTokenKey: key } });
  const { namespace, clients } = bed;
  const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(bed.dir, 'kubelet'), sparkSubmit: spark4!.sparkSubmit, python: spark4!.python, cores: 1 });
  await kubelet.start();
  t.teardown(() => kubelet.stop());

  const store = new FileKeyStore(tempDir(t, 'connect-keys-'));
  const alice = store.create('user', 'alice');
  // The API's proof, which the endpoint's submissions carry (a session's labels are the endpoint's alone).
  const proof = 'connect-endpoint-proof';
  const api = await buildApi({ cluster: bed.api.cluster, auth: { enabled: true, store }, gatewayProof: proof });
  const apiUrl = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => api.close());
  // Every pod's server listens on one port (here a free one: the fake kubelet's pods share this machine).
  const serverPort = await freePort();
  const endpoint = await startKubernetesConnect('127.0.0.1', {
    settings: parseKubernetesConnectFlags({ 'connect-port': '0' })!, clients: bed.api.kubeClients, cluster: bed.api.cluster,
    auth: { enabled: true, store }, log, apiUrl: () => apiUrl, defaultVersion: '4.2.0', dataDir: tempDir(t, 'connect-data-'), serverPort, proof,
  });
  t.teardown(() => endpoint?.close());
  const port = Number(/:(\d+)$/.exec(endpoint!.url)![1]);

  const session = randomUUID();
  const first = await runConnectClientOf('4.2.0', 'count', `sc://localhost:${port}/;token=${alice.key};session_id=${session}`);
  t.equal(first.count, 10, 'the session answers through the endpoint');
  t.equal(first.version, '4.2.0', 'from a Spark 4.2.0 server');
  const [pod] = await eventually(() => bed.pods(`${CONNECT_SESSION_LABEL}=${session}`), (pods) => pods.length === 1, { what: 'the session\'s driver pod' });
  const variable = pod.spec!.containers[0].env!.find((e) => e.name === CONNECT_SERVER_TOKEN_ENV);
  t.equal(variable?.valueFrom?.secretKeyRef?.name, `${pod.metadata!.name}-connect`, 'its driver read its token from its Secret');

  for (const [what, token] of [['no token', undefined], ['a wrong token', 'not-the-secret'], ['the owner\'s API key', alice.key]] as const) {
    const direct = await runConnectClientOf('4.2.0', 'status', `sc://localhost:${serverPort}/${token ? `;token=${token}` : ''};session_id=${session}`);
    t.equal(direct.status, 'UNAUTHENTICATED', `straight to the pod's server with ${what}: ${direct.message ?? direct.status}`);
  }

  const again = await runConnectClientOf('4.2.0', 'count', `sc://localhost:${port}/;token=${alice.key};session_id=${session}`);
  t.equal(again.count, 10, 'the session still answers through the endpoint');
});
