// The chart's Spark Connect endpoint (connect.*): a Service for its port on the api's pods, the
// api's flags, the certificate Secret the api fills and may touch alone, and the values' other
// choices. Rendered by Helm itself; the flags are read back by the api's own parser.
import type { V1Deployment, V1Role, V1Secret, V1Service } from '@kubernetes/client-node';
import t from 'tap';
import { parseArgs } from 'node:util';
import { kubernetesConnectFlags, parseKubernetesConnectFlags } from '../../cli/connect-kubernetes.js';
import { RELEASE_NAMESPACE as NS, helm, chartDir, named, renderChart } from './helm.js';

type Objects = ReturnType<typeof renderChart>;
const api = (objects: Objects) => named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.template.spec!;
/** The api's arguments as its parser reads the Connect flags (the others ignored). */
const connectSettings = (objects: Objects) => {
  const { values } = parseArgs({ args: api(objects).containers[0].args!, options: kubernetesConnectFlags, strict: false });
  return parseKubernetesConnectFlags(values as Parameters<typeof parseKubernetesConnectFlags>[0]);
};

t.test('by default a TLS Service on 15002 reaches the api\'s connect port, with a certificate kept in a Secret for its names', async (t) => {
  const objects = renderChart();
  const service = named<V1Service>(objects, 'Service', 'submission-service-connect')!;
  t.ok(service, 'the Service');
  t.equal(service.metadata!.namespace, NS);
  t.same(service.spec!.ports, [{ name: 'grpc', port: 15002, targetPort: 'connect' }]);
  t.equal(service.spec!.type, 'ClusterIP');
  t.equal(service.spec!.sessionAffinity, 'ClientIP', 'a client comes back to the replica holding its session');
  const pod = api(objects);
  t.same(service.spec!.selector, named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.selector!.matchLabels, 'selects the api\'s pods');
  t.ok(pod.containers[0].ports!.some((p) => p.name === 'connect' && p.containerPort === 15002), 'the api declares the port');
  const settings = connectSettings(objects)!;
  t.equal(settings.endpoint.port, 15002);
  t.equal(settings.endpoint.idleMs, 3_600_000, 'idle sessions stopped after 1h');
  t.equal(settings.endpoint.tls, 'made', 'TLS on');
  t.match(settings.certSecret, { namespace: NS, name: 'submission-service-connect-cert' });
  t.ok(settings.certSecret!.dnsNames.includes(`submission-service-connect.${NS}.svc`), 'the certificate names the Service');
  t.equal(settings.announceHost, `submission-service-connect.${NS}.svc`);
  const secret = named<V1Secret>(objects, 'Secret', 'submission-service-connect-cert')!;
  t.ok(secret, 'the Secret, created empty');
  t.equal(secret.data, undefined, 'the chart writes no data (the api does; helm leaves it on upgrade)');
  const role = named<V1Role>(objects, 'Role', 'submission-service-connect-cert')!;
  t.same(role.rules, [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['submission-service-connect-cert'], verbs: ['get', 'update'] }], 'that Secret only, no create or list');
  const binding = named<{ subjects: Array<{ name: string }> }>(objects, 'RoleBinding', 'submission-service-connect-cert')!;
  t.same(binding.subjects.map((s) => s.name), ['submission-service-api']);
});

t.test('outside names go into the certificate; the Service type and idle timeout are values', async (t) => {
  const objects = renderChart({
    'connect.dnsNames[0]': 'spark-connect.example.com', 'connect.serviceType': 'LoadBalancer', 'connect.idleTimeout': '30m', 'connect.port': '16002',
  });
  const settings = connectSettings(objects)!;
  t.ok(settings.certSecret!.dnsNames.includes('spark-connect.example.com'));
  t.equal(settings.announceHost, 'spark-connect.example.com', 'the address printed at start is the outside name');
  t.equal(settings.endpoint.idleMs, 30 * 60_000);
  t.equal(settings.endpoint.port, 16002);
  const service = named<V1Service>(objects, 'Service', 'submission-service-connect')!;
  t.equal(service.spec!.type, 'LoadBalancer');
  t.same(service.spec!.ports, [{ name: 'grpc', port: 16002, targetPort: 'connect' }]);
});

t.test('an existing TLS Secret is mounted and served instead: no Secret or Role of the chart\'s', async (t) => {
  const objects = renderChart({ 'connect.existingSecret': 'my-connect-tls' });
  const pod = api(objects);
  t.ok(pod.volumes!.some((v) => v.name === 'connect-tls' && v.secret?.secretName === 'my-connect-tls'));
  t.ok(pod.containers[0].volumeMounts!.some((m) => m.name === 'connect-tls' && m.readOnly));
  const settings = connectSettings(objects)!;
  t.same(settings.endpoint.tls, { certFile: '/var/run/submission-service/connect-tls/tls.crt', keyFile: '/var/run/submission-service/connect-tls/tls.key' });
  t.equal(settings.certSecret, undefined);
  t.notOk(named(objects, 'Secret', 'submission-service-connect-cert'));
  t.notOk(named(objects, 'Role', 'submission-service-connect-cert'));
});

t.test('connect.enabled=false: no Service, no port, and the api starts no endpoint', async (t) => {
  const objects = renderChart({ 'connect.enabled': 'false' });
  t.notOk(named(objects, 'Service', 'submission-service-connect'));
  t.notOk(named(objects, 'Secret', 'submission-service-connect-cert'));
  t.notOk(api(objects).containers[0].ports!.some((p) => p.name === 'connect'));
  t.equal(connectSettings(objects), undefined, '--connect-port off');
});

t.test('connect.warmPool: each template\'s size reaches the api as its warm pool; none by default', async (t) => {
  t.same([...connectSettings(renderChart({}))!.endpoint.warmPool], [], 'no pool unless asked');
  const settings = connectSettings(renderChart({ 'connect.warmPool.default': '1', 'connect.warmPool.etl': '2' }))!;
  t.same([...settings.endpoint.warmPool].sort(), [[undefined, 1], ['etl', 2]].sort(), 'default: sessions that name no template');
  const auth = named<V1Secret>(renderChart({}), 'Secret', 'submission-service-auth')!;
  t.ok(auth.data?.['gateway.secret'], 'the chart makes the gateway secret a claim proves itself with');
});

t.test('the schema refuses bad connect values', async (t) => {
  for (const [key, value] of [['connect.serviceType', 'Ingress'], ['connect.idleTimeout', 'soon'], ['connect.port', '0'], ['connect.tls', 'on'], ['connect.warmPool.etl', '100'], ['connect.warmPool.Bad_Name', '1']]) {
    const result = helm(['template', 'ss', chartDir, '--namespace', NS, '--set', `${key}=${value}`]);
    t.not(result.status, 0, `${key}=${value} refused`);
  }
});
