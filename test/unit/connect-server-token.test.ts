// A Spark Connect server's own token on Kubernetes, its pure parts (domain/connect-server-token.ts):
// the key derived from the replicas' shared secret (never that secret), the token per
// application, which pods get it, the driver's env naming the Secret (kept by admission over a
// config's variable of the same name) and the Secret's shape; the relay's header from a placement;
// the API's write of the Secret before the pod (a first attempt's, a retry's), on a fake client.
import { createHmac } from 'node:crypto';
import t from 'tap';
import {
  applyDefaults, bareDriverPod, buildRules, CONNECT_SERVER_CLASS, CONNECT_SERVER_TOKEN_ENV, connectServerToken, connectTokenKey, connectTokenSecret,
  connectTokenSecretName, DRIVER_CONTAINER, renderDriverPod, runsConnectServer, withConnectServerToken,
} from '../../domain/index.js';
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { withConnectTokenSecret } from '../../cluster/kubernetes/connect-token-secret.js';
import { podPlacement } from '../../connect/placement.js';
import { serverAuthorization } from '../../connect/relay.js';

const SHARED = 'the-gateway-secret-every-replica-has';
const connectPod = (overrides: object) => bareDriverPod({ appName: 'connect-abc-1', jobName: 'connect-abc', namespace: 'apps', configOverrides: overrides });

t.test('the key derives from the shared secret under a label of its own; tokens are per application', async (t) => {
  const key = connectTokenKey(SHARED);
  t.equal(key.length, 32, 'a 256-bit key');
  t.same(connectTokenKey(SHARED), key, 'every replica derives the same key');
  t.notSame(connectTokenKey('another-secret'), key, 'another secret, another key');
  t.notOk(key.toString('utf8').includes(SHARED), 'not the secret itself');
  const token = connectServerToken(key, 'connect-abc-1');
  t.match(token, /^[0-9a-f]{64}$/, 'hex: a header value as it is');
  t.equal(connectServerToken(connectTokenKey(SHARED), 'connect-abc-1'), token, 'the relay of any replica computes the driver\'s token');
  t.not(connectServerToken(key, 'connect-abc-2'), token, 'another application, another token');
  t.not(token, createHmac('sha256', SHARED).update('connect-abc-1').digest('hex'), 'not an HMAC under the shared secret itself');
});

t.test('only a Connect server\'s driver gets a token', async (t) => {
  t.ok(runsConnectServer(connectPod({ mainClass: CONNECT_SERVER_CLASS, mainApplicationFile: 'spark-internal' })), 'the endpoint\'s submissions');
  t.notOk(runsConnectServer(connectPod({ mainClass: 'org.example.Main' })), 'another main class');
  t.notOk(runsConnectServer(connectPod({})), 'no main class');
  const broken = connectPod({});
  broken.metadata!.annotations!['submission-service/config-overrides'] = '{not json';
  t.notOk(runsConnectServer(broken), 'overrides that are not JSON (admission refuses them)');
});

t.test('the driver\'s env names the Secret, over any variable of that name, and admission keeps it', async (t) => {
  const bare = connectPod({ mainClass: CONNECT_SERVER_CLASS });
  bare.spec!.containers[0].env = [{ name: CONNECT_SERVER_TOKEN_ENV, value: 'chosen-by-someone' }, { name: 'OTHER', value: 'x' }];
  bare.spec!.containers.push({ name: 'sidecar' });
  const pod = withConnectServerToken(bare, connectTokenSecretName('connect-abc-1'));
  const driver = pod.spec!.containers.find((c) => c.name === DRIVER_CONTAINER)!;
  t.same(driver.env, [
    { name: 'OTHER', value: 'x' },
    { name: CONNECT_SERVER_TOKEN_ENV, valueFrom: { secretKeyRef: { name: 'connect-abc-1-connect', key: 'token' } } },
  ], 'one variable, from the Secret, no value in the pod');
  t.same(pod.spec!.containers[1], { name: 'sidecar' }, 'other containers untouched');
  t.equal(bare.spec!.containers[0].env!.length, 2, 'the pod given is not changed');

  const rules = buildRules({ nodePools: [{ cloudProvider: 'gce', instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false }] });
  const config = applyDefaults({ mainClass: CONNECT_SERVER_CLASS, driver: { env: { [CONNECT_SERVER_TOKEN_ENV]: 'from-the-config' } } }, rules);
  const admitted = renderDriverPod(pod, config, { appName: 'connect-abc-1', jobName: 'connect-abc', namespace: 'apps' }, rules);
  const variables = admitted.spec!.containers[0].env!.filter((e) => e.name === CONNECT_SERVER_TOKEN_ENV);
  t.same(variables, [{ name: CONNECT_SERVER_TOKEN_ENV, valueFrom: { secretKeyRef: { name: 'connect-abc-1-connect', key: 'token' } } }], 'admitted: the Secret\'s, not the config\'s');
  t.notOk(JSON.stringify(admitted).includes(connectServerToken(connectTokenKey(SHARED), 'connect-abc-1')), 'no token anywhere in the pod');
});

t.test('the Secret: immutable, owned by the Application (not as its controller), the token under one key', async (t) => {
  const owner = { apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'connect-abc-1', uid: 'u-1' };
  t.same(connectTokenSecret('connect-abc-1', 'f00d', owner), {
    metadata: {
      name: 'connect-abc-1-connect', labels: { 'submission-service/app-name': 'connect-abc-1' },
      ownerReferences: [{ ...owner, controller: false }],
    },
    type: 'Opaque',
    immutable: true,
    stringData: { token: 'f00d' },
  });
});

t.test('the relay sends what the placement says the server was given, and nothing when it was given none', async (t) => {
  const key = connectTokenKey(SHARED);
  const tokened = podPlacement(15002, async () => '10.0.0.7', (appName) => connectServerToken(key, appName));
  t.same(serverAuthorization(tokened.token('connect-abc-1')), { authorization: `Bearer ${connectServerToken(key, 'connect-abc-1')}` });
  t.same(serverAuthorization(podPlacement(15002, async () => undefined).token('connect-abc-1')), {}, 'no key: no header');
});

t.test('the API writes the Secret before the pod names it; a retry finds the first attempt\'s', async (t) => {
  const created: V1Secret[] = [];
  let existing = false;
  const core = {
    createNamespacedSecret: async ({ body }: { body: V1Secret }) => {
      if (existing) throw Object.assign(new Error('exists'), { code: 409, body: { message: `secrets "${body.metadata?.name}" already exists` } });
      created.push(body);
      return body;
    },
  };
  const deps = { clients: { core, server: 'https://bed' } as unknown as KubeClients, namespace: 'apps', connectTokenKey: connectTokenKey(SHARED) };
  const owner = { apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'connect-abc-1', uid: 'u-1' };
  const bare = connectPod({ mainClass: CONNECT_SERVER_CLASS });

  const pod = await withConnectTokenSecret(deps, bare, 'connect-abc-1', owner);
  t.same(created.map((s) => [s.metadata?.name, s.stringData?.token]), [['connect-abc-1-connect', connectServerToken(deps.connectTokenKey, 'connect-abc-1')]], 'the Secret, with the token');
  t.equal(pod.spec!.containers[0].env?.at(-1)?.valueFrom?.secretKeyRef?.name, 'connect-abc-1-connect', 'then the pod naming it');

  existing = true;
  await t.rejects(withConnectTokenSecret(deps, bare, 'connect-abc-1', owner), /already exists/, 'a first attempt does not take a Secret it did not make');
  const retried = await withConnectTokenSecret(deps, bare, 'connect-abc-1', owner, true);
  t.equal(retried.spec!.containers[0].env?.at(-1)?.name, CONNECT_SERVER_TOKEN_ENV, 'a retry\'s pod names the first attempt\'s Secret');

  created.length = 0;
  existing = false;
  const other = connectPod({ mainClass: 'org.example.Main' });
  t.equal(await withConnectTokenSecret(deps, other, 'connect-abc-1', owner), other, 'a driver that is not a Connect server: the pod as it was');
  t.same(await withConnectTokenSecret({ ...deps, connectTokenKey: undefined }, bare, 'connect-abc-1', owner), bare, 'no key: the pod as it was');
  t.same(created, [], 'and no Secret, nor for a driver that is not a Connect server');
});
