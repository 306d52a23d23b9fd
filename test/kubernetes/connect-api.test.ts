// The api's Spark Connect endpoint in Kubernetes mode against a real apiserver and our webhook
// (the test bed, no node): its certificate issued into the chart's Secret and served (a client
// trusting that Secret's CA verifies it), every call's key checked, a session submitted as the
// caller's application whose driver pod is then reached on its pod IP, another key refused that
// session. The session's server gets a token of its own (issue 25: Spark 4 checks it) from a
// Secret its Application owns, named in the driver's env, and the endpoint sends it on every call.
// TEST DOUBLES: a fake kubelet gives the driver pod its phase and IP (127.0.0.1), and a stand-in
// HTTP/2 server plays the pod's Connect server (it answers every call OK and keeps its headers).
import { connect, createServer, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { parseKubernetesConnectFlags, startKubernetesConnect } from '../../cli/connect-kubernetes.js';
import { CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import { CONNECT_SERVER_TOKEN_ENV, connectServerToken, connectTokenKey } from '../../domain/index.js';
import { buildApi } from '../../submit-api/app.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;
const SESSION = '0b7e6c1a-3f2d-4e5b-9c8a-1d2e3f4a5b6c';
/** The api replicas' shared secret (the chart's gateway.secret): the servers' token key derives from it. */
const TOKEN_KEY = connectTokenKey('connect-api-test-gateway-secret');

/** A gRPC request's first message: field 1, the session id (all the endpoint reads). */
function executePlanBody(sessionId: string): Buffer {
  const field = Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(sessionId)]), Buffer.from(sessionId)]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(field.length, 1);
  return Buffer.concat([prefix, field]);
}

/** One unary-style call; its grpc-status (from a trailers-only answer or the trailers) and the response headers. */
function call(client: ClientHttp2Session, key: string | undefined, sessionId = SESSION): Promise<{ status: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const request = client.request({
      ':method': 'POST', ':path': '/spark.connect.SparkConnectService/ExecutePlan', 'content-type': 'application/grpc', te: 'trailers',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    });
    let headers: IncomingHttpHeaders = {};
    request.on('response', (received) => {
      headers = received;
      if (received['grpc-status'] !== undefined) resolve({ status: String(received['grpc-status']), headers });
    });
    request.on('trailers', (trailers) => resolve({ status: String(trailers['grpc-status']), headers }));
    request.on('error', reject);
    request.on('data', () => undefined);
    request.end(executePlanBody(sessionId));
  });
}

t.test('the api\'s Connect endpoint on Kubernetes', async (t) => {
  const bed = await startKubeBed(t, { api: { connectTokenKey: TOKEN_KEY } });
  const { core } = bed.clients;
  const namespace = bed.namespace;
  const store = new FileKeyStore(tempDir(t, 'connect-keys-'));
  const [alice, bob] = [store.create('user', 'alice'), store.create('user', 'bob')];
  // The API's proof, which the endpoint's submissions carry (a session's labels are the endpoint's alone).
  const proof = 'connect-endpoint-proof';
  const api = await buildApi({ cluster: bed.api.cluster, auth: { enabled: true, store }, gatewayProof: proof });
  const apiUrl = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => api.close());

  // The stand-in for the driver pod's Connect server: answers OK and says it answered.
  const standIn = createServer();
  const authorizations: Array<string | undefined> = [];
  standIn.on('stream', (stream, headers) => {
    authorizations.push(headers.authorization);
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-served-by': 'the-pod' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end();
    });
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => standIn.close(resolve)));

  // The chart makes the Secret empty; the api fills it.
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'connect-cert' }, type: 'Opaque' } });
  const settings = parseKubernetesConnectFlags({ 'connect-port': '0', 'connect-cert-secret': `${namespace}/connect-cert`, 'connect-service': `${namespace}/submission-service-connect` })!;
  const endpoint = await startKubernetesConnect('127.0.0.1', {
    settings, clients: bed.api.kubeClients, cluster: bed.api.cluster, auth: { enabled: true, store }, log, apiUrl: () => apiUrl,
    defaultVersion: '4.2.0', dataDir: tempDir(t, 'connect-data-'), serverPort: (standIn.address() as AddressInfo).port, proof,
  });
  t.teardown(() => endpoint?.close());
  t.match(endpoint?.url, `sc://submission-service-connect.${namespace}.svc:`, 'announced by the Service\'s name');
  const port = Number(/:(\d+)$/.exec(endpoint!.url)![1]);

  const secret = await core.readNamespacedSecret({ name: 'connect-cert', namespace });
  const ca = Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString();
  t.match(ca, /BEGIN CERTIFICATE/, 'the api wrote a CA into the Secret');
  // A client that trusts only that CA, naming localhost (one of the certificate's names).
  const client = connect(`https://127.0.0.1:${port}`, { ca, servername: 'localhost' });
  t.teardown(() => client.close());
  client.on('error', () => undefined);

  t.equal((await call(client, undefined)).status, '16', 'no key: UNAUTHENTICATED (over TLS the client verified)');
  t.equal((await call(client, 'ssk_unknown')).status, '16', 'an unknown key: UNAUTHENTICATED');
  t.same((await bed.pods()).length, 0, 'no application for a refused call');

  // alice's first call is held while her session's application starts.
  const first = call(client, alice.key);
  const pod = await eventually(async () => (await bed.pods(`${CONNECT_SESSION_LABEL}=${SESSION}`))[0], (p) => p !== undefined,
    { what: 'the session\'s driver pod', timeoutMs: 60_000 });
  t.ok(pod!.spec!.containers[0].args!.includes('org.apache.spark.sql.connect.service.SparkConnectServer'), 'its driver runs Spark\'s Connect server');
  // TEST DOUBLE (kubelet): the pod runs, at an IP where the stand-in listens.
  const now = new Date();
  pod!.status = { phase: 'Running', podIP: '127.0.0.1', podIPs: [{ ip: '127.0.0.1' }], startTime: now, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] };
  await core.replaceNamespacedPodStatus({ name: pod!.metadata!.name!, namespace, body: pod! });
  const answered = await first;
  t.equal(answered.status, '0', 'the held call is relayed once the pod runs');
  t.equal(answered.headers['x-served-by'], 'the-pod', 'answered by the server on the pod\'s IP');
  const own = await fetch(`${apiUrl}/api/apps/${pod!.metadata!.name!}`, { headers: { 'x-api-key': alice.key } });
  const record = await own.json() as { submittedBy?: string | null };
  t.equal(record.submittedBy, alice.id, 'the session\'s application was submitted as alice\'s key');

  // The server's own token: from a Secret of its Application's, never in the pod, the config or the record.
  const appName = pod!.metadata!.name!;
  const token = connectServerToken(TOKEN_KEY, appName);
  t.same(authorizations, [`Bearer ${token}`], 'the endpoint sent the server its own token, not alice\'s key');
  const variable = pod!.spec!.containers[0].env!.find((e) => e.name === CONNECT_SERVER_TOKEN_ENV);
  t.same(variable, { name: CONNECT_SERVER_TOKEN_ENV, valueFrom: { secretKeyRef: { name: `${appName}-connect`, key: 'token' } } }, 'the driver reads it from its Secret');
  const tokenSecret = await core.readNamespacedSecret({ name: `${appName}-connect`, namespace });
  t.equal(Buffer.from(tokenSecret.data?.token ?? '', 'base64').toString(), token, 'which holds the token the endpoint sends');
  t.equal(tokenSecret.immutable, true, 'immutable');
  t.same(tokenSecret.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Application', appName, pod!.metadata!.ownerReferences![0].uid]], 'owned by the Application: it goes with it');
  const seen = JSON.stringify({ pod, record: await (await fetch(`${apiUrl}/api/apps/${appName}`, { headers: { 'x-api-key': alice.key } })).json() });
  t.notOk(seen.includes(token), 'the token is neither in the pod nor in what the API shows');

  t.equal((await call(client, bob.key)).status, '7', 'bob naming alice\'s session: PERMISSION_DENIED');
  t.equal((await bed.pods(`${CONNECT_SESSION_LABEL}=${SESSION}`)).length, 1, 'and no second application');
  t.equal((await call(client, alice.key)).status, '0', 'alice\'s session goes on');
  t.equal(authorizations.at(-1), `Bearer ${token}`, 'with the server\'s token on every call');
});
