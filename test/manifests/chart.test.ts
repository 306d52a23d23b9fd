// The Helm chart, rendered by Helm itself (built from its Go module by manifests/install-helm.sh).
import type {
  V1ConfigMap, V1Deployment, V1Ingress, V1MutatingWebhookConfiguration, V1PolicyRule, V1Role, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { rulesFrom } from '../../cli/rules.js';
import { DRIVER_ROLE_RULES } from '../../cluster/kubernetes/bootstrap.js';
import { driverPodsPolicy } from '../../cluster/kubernetes/driver-pods-policy.js';
import { readVersionedStatic } from '../../cluster/history/spark-static-dir.js';
import { LocalSparkStatic } from '../../cluster/local/spark-static.js';
import { sparkJars } from '../../cluster/local/spark-builds.js';
import { realSpark } from '../helpers/service.js';
import { effectiveConfig, engineVersionRefusal } from '../../domain/index.js';
import { mutatingWebhookConfiguration } from '../../webhook/server/registration.js';
import { RELEASE_NAMESPACE, chartDir, helm, named, ofKind, renderChart } from './helm.js';

const defaults = renderChart();
const noNotebooks = renderChart({ 'notebookService.enabled': 'false', 'ingress.enabled': 'true', 'ingress.host': 'spark.example.com' });
const withIngress = renderChart({ 'ingress.enabled': 'true', 'ingress.host': 'spark.example.com', 'ingress.className': 'nginx' });

function servicePort(objects: typeof defaults, name: string) {
  const service = named<V1Service>(objects, 'Service', name);
  return service?.spec?.ports?.[0];
}

/** The container port a Service's named targetPort lands on, in the Deployment it selects. */
function landsOn(objects: typeof defaults, serviceName: string): number | undefined {
  const service = named<V1Service>(objects, 'Service', serviceName)!;
  const deployment = ofKind<V1Deployment>(objects, 'Deployment').find((d) =>
    Object.entries(service.spec!.selector!).every(([k, v]) => d.spec!.template.metadata!.labels![k] === v));
  const port = deployment?.spec?.template.spec?.containers[0].ports?.find((p) => p.name === service.spec!.ports![0].targetPort);
  return port?.containerPort;
}

t.test('helm lint --strict passes, with defaults and with the variants', async (t) => {
  for (const sets of [[], ['--set', 'notebookService.enabled=false'], ['--set', 'ingress.enabled=true,ingress.host=a.example.com,auth.enabled=false']]) {
    const result = helm(['lint', '--strict', chartDir, ...sets]);
    t.equal(result.status, 0, `lint ${sets.join(' ') || 'defaults'}${result.status ? `:\n${result.output}` : ''}`);
  }
});

t.test('values.schema.json refuses bad values', async (t) => {
  for (const [set, why] of [
    ['placement=azure', /placement/], ['webhook.failurePolicy=Sometimes', /failurePolicy/],
    ['nodePools[0].cpu=0', /cpu/], ['ingres.enabled=true', /ingres/],
  ] as const) {
    const result = helm(['template', 'ss', chartDir, '--set', set]);
    t.not(result.status, 0, `${set} refused`);
    t.match(result.output, why);
  }
});

t.test('services: submission-service and notebook-service on port 80, webhook on 443', async (t) => {
  t.equal(servicePort(defaults, 'submission-service')?.port, 80);
  t.equal(landsOn(defaults, 'submission-service'), 8080, 'submission-service → api 8080');
  t.equal(servicePort(defaults, 'notebook-service')?.port, 80);
  t.equal(landsOn(defaults, 'notebook-service'), 8888, 'notebook-service → gateway 8888');
  t.equal(servicePort(defaults, 'submission-service-webhook')?.port, 443);
  t.equal(landsOn(defaults, 'submission-service-webhook'), 9443, 'webhook service → 9443');
});

t.test('deployments run the three processes of the one command', async (t) => {
  const command = (name: string) => named<V1Deployment>(defaults, 'Deployment', name)?.spec?.template.spec?.containers[0].command;
  t.same(command('submission-service-api'), ['submission-service', 'api']);
  t.same(command('submission-service-webhook'), ['submission-service', 'webhook']);
  t.same(command('submission-service-gateway'), ['submission-service', 'gateway']);
  t.equal(named<V1Deployment>(defaults, 'Deployment', 'submission-service-api')?.spec?.replicas, 2);
  for (const deployment of ofKind<V1Deployment>(defaults, 'Deployment')) {
    t.equal(deployment.metadata?.namespace, RELEASE_NAMESPACE);
    t.equal(deployment.spec?.template.spec?.serviceAccountName, deployment.metadata?.name, `${deployment.metadata?.name} has its own service account`);
  }
});

t.test('notebookService.enabled=false removes the notebook service, its deployment and account', async (t) => {
  t.notOk(named(noNotebooks, 'Service', 'notebook-service'));
  t.notOk(named(noNotebooks, 'Deployment', 'submission-service-gateway'));
  t.notOk(named(noNotebooks, 'ServiceAccount', 'submission-service-gateway'));
  t.ok(named(noNotebooks, 'Service', 'submission-service'), 'the API stays');
  const ingress = ofKind<V1Ingress>(noNotebooks, 'Ingress')[0];
  t.same(ingress.spec?.rules?.[0].http?.paths.map((p) => p.path), ['/api', '/dashboard'], 'no /notebooks path');
});

t.test('ingress: off by default; one host with /api, /dashboard and /notebooks', async (t) => {
  t.same(ofKind(defaults, 'Ingress'), []);
  const ingresses = ofKind<V1Ingress>(withIngress, 'Ingress');
  t.equal(ingresses.length, 1);
  const spec = ingresses[0].spec!;
  t.equal(spec.ingressClassName, 'nginx');
  t.equal(spec.rules?.length, 1, 'one rule: one host');
  t.equal(spec.rules![0].host, 'spark.example.com');
  t.same(spec.rules![0].http!.paths.map((p) => [p.path, p.pathType, p.backend.service?.name, p.backend.service?.port?.number]), [
    ['/api', 'Prefix', 'submission-service', 80],
    ['/dashboard', 'Prefix', 'submission-service', 80],
    ['/notebooks', 'Prefix', 'notebook-service', 80],
  ]);
});

t.test('the MutatingWebhookConfiguration', async (t) => {
  const [mwc, ...more] = ofKind<V1MutatingWebhookConfiguration>(defaults, 'MutatingWebhookConfiguration');
  t.same(more, [], 'exactly one');
  t.equal(mwc.webhooks?.length, 2);
  for (const webhook of mwc.webhooks!) {
    t.equal(webhook.failurePolicy, 'Fail', `${webhook.name}: failurePolicy from values`);
    t.equal(webhook.sideEffects, 'None');
    t.same(webhook.admissionReviewVersions, ['v1']);
    t.equal(webhook.reinvocationPolicy, 'Never');
    t.equal(webhook.timeoutSeconds, 5);
    t.same(webhook.namespaceSelector, { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['spark-apps'] }] });
    t.same(webhook.clientConfig.service, { namespace: RELEASE_NAMESPACE, name: 'submission-service-webhook', path: '/mutate-pods', port: 443 });
    t.notOk(webhook.clientConfig.caBundle, 'caBundle left to the webhook process');
    t.same(webhook.rules, [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }]);
  }
  const [labelled, executors] = mwc.webhooks!;
  t.match(labelled.objectSelector?.matchExpressions, [{ key: 'submission-service/job-name', operator: 'Exists' }]);
  t.match(executors.objectSelector?.matchExpressions, [{ key: 'spark-role', operator: 'In', values: ['executor'] }]);
  t.match(mwc.metadata?.annotations, { 'submission-service.io/ca-bundle': 'injected-by-webhook' });

  // The same selectors, names and conditions as the webhook's own registration code (webhook/server/registration.ts):
  // the API's own service account's admitted driver pods skip the webhook, executors never do.
  const apiUser = `system:serviceaccount:${RELEASE_NAMESPACE}:submission-service-api`;
  const own = mutatingWebhookConfiguration({ name: 'x', caBundle: '', service: { namespace: RELEASE_NAMESPACE, name: 'submission-service-webhook' }, namespaces: ['spark-apps'], apiUser }) as { webhooks: Record<string, unknown>[] };
  t.same(mwc.webhooks!.map((w) => [w.name, w.objectSelector, w.namespaceSelector, w.rules, w.clientConfig.service, w.matchConditions]),
    own.webhooks.map((w) => [w.name, w.objectSelector, w.namespaceSelector, w.rules, (w.clientConfig as Record<string, unknown>).service, w.matchConditions]));
  t.ok(ofKind<V1ServiceAccount>(defaults, 'ServiceAccount').some((a) => a.metadata?.name === 'submission-service-api' && a.metadata.namespace === RELEASE_NAMESPACE), 'the condition names the API\'s service account');
  t.equal(ofKind<V1Deployment>(defaults, 'Deployment').find((d) => d.metadata?.name === 'submission-service-api')?.spec?.template.spec?.serviceAccountName, 'submission-service-api', 'which the API runs as');

  const tuned = renderChart({ 'webhook.failurePolicy': 'Ignore', 'webhook.timeoutSeconds': '10', applicationsNamespace: 'batch' });
  const tunedHooks = ofKind<V1MutatingWebhookConfiguration>(tuned, 'MutatingWebhookConfiguration')[0].webhooks!;
  t.same(tunedHooks.map((w) => [w.failurePolicy, w.timeoutSeconds, w.namespaceSelector?.matchExpressions?.[0].values]),
    [['Ignore', 10, ['batch']], ['Ignore', 10, ['batch']]]);
  const split = renderChart({ 'webhook.executorFailurePolicy': 'Ignore' });
  t.same(ofKind<V1MutatingWebhookConfiguration>(split, 'MutatingWebhookConfiguration')[0].webhooks!.map((w) => w.failurePolicy), ['Fail', 'Ignore']);
});

t.test('RBAC: least privilege', async (t) => {
  const roles = [...ofKind<V1Role>(defaults, 'Role'), ...ofKind<V1Role>(defaults, 'ClusterRole')];
  const all: V1PolicyRule[] = roles.flatMap((r) => r.rules ?? []);
  t.ok(all.length > 0);
  for (const rule of all) {
    t.notOk(rule.verbs.includes('*'), `no * verb in ${JSON.stringify(rule)}`);
    t.notOk(rule.resources?.includes('*'), 'no * resource');
    t.notOk(rule.apiGroups?.includes('*'), 'no * apiGroup');
    t.notOk(rule.nonResourceURLs, 'no non-resource URLs');
    t.notOk(rule.verbs.some((v) => ['escalate', 'bind', 'impersonate'].includes(v)), 'no escalation verbs');
  }
  const clusterRoles = ofKind<V1Role>(defaults, 'ClusterRole');
  t.equal(clusterRoles.length, 1, 'the one cluster-wide grant is the webhook configuration');
  t.same(clusterRoles[0].rules, [{ apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], resourceNames: [`submission-service-${RELEASE_NAMESPACE}`], verbs: ['get', 'patch'] }]);
  const secretRules = all.filter((r) => r.resources?.includes('secrets'));
  t.same(secretRules, [
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['submission-service-auth'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['submission-service-connect-cert'], verbs: ['get', 'update'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['submission-service-webhook-cert'], verbs: ['get', 'watch', 'update', 'patch'] },
  ], 'secrets: read each by name only; the api reads the keys Secret (and creates kernels\' launcher Secrets) and keeps the Connect certificate Secret, the webhook its own certificate Secret');
  t.same(ofKind<V1Role>(renderChart({ 'auth.enabled': 'false' }), 'Role').filter((r) => r.metadata?.name === 'submission-service-api-keys'), [],
    'no keys Secret access without auth');

  const role = (name: string, namespace: string) => {
    const found = ofKind<V1Role>(defaults, 'Role').find((r) => r.metadata?.name === name && r.metadata?.namespace === namespace);
    return found?.rules;
  };
  t.same(role('submission-service-api', 'spark-apps'), [
    { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list', 'watch', 'patch', 'delete', 'deletecollection'] },
    { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
    { apiGroups: ['submission-service.io'], resources: ['applications', 'applications/status', 'configtemplates', 'schedules', 'schedules/status'], verbs: ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete'] },
    // Jobs' profiles: written by the leader once per ended run, never deleted (job-profile-store.ts).
    { apiGroups: ['submission-service.io'], resources: ['jobprofiles'], verbs: ['create', 'get', 'list', 'watch', 'update'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create', 'list', 'watch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['submission-service-controller'], verbs: ['get', 'update'] },
  ]);
  t.same(role('submission-service-webhook', 'spark-apps'), [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] }, // an executor's driver, by name; no watch of pods
    { apiGroups: ['submission-service.io'], resources: ['configtemplates', 'jobprofiles'], verbs: ['get', 'list', 'watch'] },
  ]);
  // What Spark's driver uses, verb by verb; the test bed's Role (bootstrap.ts) is the same.
  t.same(role('spark-driver', 'spark-apps'), DRIVER_ROLE_RULES);
  t.same(DRIVER_ROLE_RULES.map((r) => [r.resources, r.verbs]), [
    [['pods'], ['create', 'get', 'list', 'watch', 'delete', 'deletecollection']],
    [['configmaps'], ['create', 'deletecollection']],
    [['persistentvolumeclaims'], ['create', 'list', 'deletecollection']],
    [['services'], ['deletecollection']],
  ]);
  t.equal(named(defaults, 'ServiceAccount', 'spark-driver')?.metadata?.namespace, 'spark-apps');
  t.equal(named<{ automountServiceAccountToken?: boolean }>(defaults, 'ServiceAccount', 'submission-service-gateway')?.automountServiceAccountToken, false,
    'the gateway has no Kubernetes credentials');
});

t.test('the drivers\' admission policy is the one the test bed installs (driver-pods-policy.ts), for the drivers\' accounts', async (t) => {
  // Helm's labels aside, object for object: `testbed up --real-node` runs Spark's drivers under the chart's rules.
  const unlabelled = (objects: typeof defaults, kind: string, name: string) => {
    const found = named<{ metadata?: { labels?: unknown } }>(objects, kind, name);
    if (found) delete found.metadata?.labels;
    return found;
  };
  for (const [sets, accounts] of [
    [{}, ['spark-driver']],
    // The drivers' own account first, each once: as the chart's prepend and uniq, and bootstrap.ts's caller.
    [{ 'policy.serviceAccounts': '{team-a,spark-driver}', driverServiceAccount: 'drivers' }, ['drivers', 'team-a', 'spark-driver']],
  ] as const) {
    const rendered = renderChart(sets);
    const { policy, binding } = driverPodsPolicy('spark-apps', [...accounts], RELEASE_NAMESPACE);
    const name = `submission-service-driver-pods-${RELEASE_NAMESPACE}`;
    t.same(unlabelled(rendered, 'ValidatingAdmissionPolicy', name), { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', ...policy },
      `the policy, ${JSON.stringify(sets)}`);
    t.same(unlabelled(rendered, 'ValidatingAdmissionPolicyBinding', name), { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', ...binding },
      `its binding, ${JSON.stringify(sets)}`);
  }
  t.match(driverPodsPolicy('spark-apps', ['spark-driver', 'spark-driver'], 'x').policy.spec?.matchConditions?.[0].expression,
    /^request\.userInfo\.username in \["system:serviceaccount:spark-apps:spark-driver"\]$/, 'an account named twice is matched once');
});

t.test('the ConfigMap is a node-pool file the webhook turns into the intended rules', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rulesOf = (objects: typeof defaults) => {
    const file = join(dir, 'node-pools.json');
    writeFileSync(file, named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
    return rulesFrom(file, 'spark-apps'); // what `submission-service webhook --node-pools` does with it
  };
  const rules = rulesOf(defaults);
  t.same(rules.pools.map((p) => [p.cpu, p.maximumSchedulableCoreRequest]), [[2, 1.7], [4, 3.4], [8, 6.8]], 'the three pools of the example cluster');
  t.equal(rules.serviceAccount, 'spark-driver');
  t.equal(rules.placement.preemptibleLabel.key, 'submission-service/preemptible');
  t.equal(rules.imagePattern, 'apache/spark:{version}');
  const eks = rulesOf(renderChart({ placement: 'eks', 'images.3\\.5\\.7': 'my/spark:3.5.7', 'sizing.defaultDriverCoreRequestReserveMillicores': '100' }));
  t.equal(eks.placement.preemptibleLabel.key, 'eks.amazonaws.com/capacityType');
  t.same(eks.images, { '3.5.7': 'my/spark:3.5.7', '4.2.0': 'apache/spark:4.2.0' }, 'one entry replaced, the others kept');
  t.equal(eks.sizing.defaultDriverCoreRequestReserveMillicores, 100);
});

t.test('Spark versions: the offered list, the default and a per-version image map reach admission', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rulesOf = (objects: typeof defaults) => {
    writeFileSync(join(dir, 'node-pools.json'), named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
    return rulesFrom(join(dir, 'node-pools.json'), 'spark-apps');
  };
  const rules = rulesOf(defaults);
  t.same(rules.engineVersions, ['3.5.7', '4.2.0'], 'offered by default');
  t.equal(rules.defaultEngineVersion, '3.5.7');
  t.same(rules.images, { '3.5.7': 'apache/spark:3.5.7', '4.2.0': 'apache/spark:4.2.0' }, 'an image per offered version');
  const built = rulesOf(renderChart({
    'images.3\\.5\\.7': 'localhost/submission-service/spark:3.5.7', 'images.4\\.2\\.0': 'localhost/submission-service/spark:4.2.0', defaultEngineVersion: '4.2.0',
  }));
  const admitted = (engineVersion: string) => effectiveConfig(undefined, { engineVersion }, built, () => undefined);
  const four = admitted('4.2.0');
  t.equal(four.ok && four.config.image, 'localhost/submission-service/spark:4.2.0', "4.2.0's driver and executors run the 4.2.0 image");
  const three = admitted('3.5.7');
  t.equal(three.ok && three.config.image, 'localhost/submission-service/spark:3.5.7', "3.5.7's the 3.5.7 image");
  const none = effectiveConfig(undefined, {}, built, () => undefined);
  t.equal(none.ok && none.config.engineVersion, '4.2.0', 'defaultEngineVersion chooses for submissions that name none');
  const unoffered = engineVersionRefusal('3.4.1', built.engineVersions);
  t.equal(unoffered?.field, 'engineVersion', 'a version not in engineVersions is refused (at admission of a real submission)');
  const narrowed = rulesOf(renderChart({ engineVersions: '{4.2.0}', defaultEngineVersion: '4.2.0' }));
  t.same(narrowed.engineVersions, ['4.2.0'], 'the list is the chart value');
  const bad = helm(['template', 'ss', chartDir, '--set', 'engineVersions[0]=4.2']);
  t.not(bad.status, 0, 'a list entry that is no version is refused by the values schema');
});

t.test('one headless drivers\' Service in the applications namespace, named in the rules, guarded by an admission policy', async (t) => {
  const service = named<V1Service>(defaults, 'Service', 'spark-drivers');
  t.equal(service?.metadata?.namespace, 'spark-apps');
  t.equal(service?.spec?.clusterIP, 'None', 'headless: DNS answers each driver\'s own name');
  t.equal(service?.spec?.publishNotReadyAddresses, true, 'from the driver\'s start (no readiness probe)');
  t.same(service?.spec?.selector, { 'spark-role': 'driver' });
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const rulesOf = (objects: typeof defaults) => {
    writeFileSync(join(dir, 'node-pools.json'), named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
    return rulesFrom(join(dir, 'node-pools.json'), 'spark-apps');
  };
  t.equal(rulesOf(defaults).driverService, 'spark-drivers', 'admission names drivers under it');
  const dnsPolicy = (o: { kind?: string; metadata?: { name?: string } }, kind: string) => o.kind === kind && o.metadata?.name === 'submission-service-driver-dns-spark-apps';
  const policy = defaults.find((o) => dnsPolicy(o, 'ValidatingAdmissionPolicy')) as { spec?: { validations?: { expression: string }[] } } | undefined;
  t.match(policy?.spec?.validations?.[0].expression, /object\.spec\.hostname == object\.metadata\.name/, 'a pod may publish only its own name under it');
  const binding = defaults.find((o) => dnsPolicy(o, 'ValidatingAdmissionPolicyBinding')) as { spec?: { matchResources?: unknown } } | undefined;
  t.same(binding?.spec?.matchResources, { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'spark-apps' } } }, 'in the applications namespace');
  const off = renderChart({ driverService: '' });
  t.notOk(named<V1Service>(off, 'Service', 'spark-drivers'), 'driverService empty: no Service');
  t.notOk(off.some((o) => dnsPolicy(o, 'ValidatingAdmissionPolicy')), 'nor policy');
  t.equal(rulesOf(off).driverService, undefined, 'executors dial the pod IP');
});

t.test('the History Server runs as the image\'s own user (Hadoop\'s login needs its passwd entry)', async (t) => {
  const objects = renderChart({ 'history.eventLogDir': 's3a://bucket/spark-events', 'history.server.image': 'my/spark:3.5.7' });
  const container = named<V1Deployment>(objects, 'Deployment', 'submission-service-history')?.spec?.template.spec?.containers[0];
  t.same([container?.securityContext?.runAsUser, container?.securityContext?.runAsGroup], [185, 185]);
  t.equal(container?.securityContext?.readOnlyRootFilesystem, true, 'the rest of the container security context stays');
});

t.test('history.s3Region reaches the History Server and, through the node-pool file, the drivers', async (t) => {
  const history = { 'history.eventLogDir': 's3a://bucket/spark-events', 'history.server.image': 'my/spark:4.2.0', 'history.s3Endpoint': 'http://s3.storage.svc:7070' };
  const historyOpts = (objects: typeof defaults) => named<V1Deployment>(objects, 'Deployment', 'submission-service-history')
    ?.spec?.template.spec?.containers[0].env?.find((e) => e.name === 'SPARK_HISTORY_OPTS')?.value ?? '';
  const historySection = (objects: typeof defaults) =>
    (JSON.parse(named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']) as { history?: { s3Region?: string } }).history;
  const set = renderChart({ ...history, 'history.s3Region': 'us-east-1' });
  t.match(historyOpts(set), /-Dspark\.hadoop\.fs\.s3a\.endpoint\.region=us-east-1(\s|$)/, 'the History Server signs for the region');
  t.equal(historySection(set)?.s3Region, 'us-east-1', 'the api and the webhook read it from the node-pool file (drivers: spark.hadoop.fs.s3a.endpoint.region)');
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'node-pools.json'), named<V1ConfigMap>(set, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
  t.equal(rulesFrom(join(dir, 'node-pools.json'), 'spark-apps').eventLog?.s3?.region, 'us-east-1', 'the drivers\' event-log settings carry it');
  const unset = renderChart(history);
  t.notMatch(historyOpts(unset), /endpoint\.region/, 'empty (the default): S3A\'s own choice');
  t.equal(historySection(unset)?.s3Region, undefined);
  t.not(helm(['template', 'x', chartDir, '--set', 'history.s3Region=Not A Region']).status, 0, 'the values schema refuses what is no region name');
});

t.test('the log follow\'s limits are values: the api gets them as its flags, the code\'s defaults by default', async (t) => {
  const flag = (objects: typeof defaults, name: string) => {
    const args = named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.template.spec!.containers[0].args!;
    const at = args.indexOf(name);
    return at < 0 ? undefined : args[at + 1];
  };
  t.equal(flag(defaults, '--log-follow-limit'), '32', 'default: 32 followed pods (cli/kubernetes.ts)');
  t.equal(flag(defaults, '--log-archive-max-mb'), '1024', 'default: 1024 MiB');
  const set = renderChart({ 'history.logFollowLimit': '0', 'history.logArchiveMaxMb': '64' });
  t.equal(flag(set, '--log-follow-limit'), '0', 'history.logFollowLimit → --log-follow-limit');
  t.equal(flag(set, '--log-archive-max-mb'), '64', 'history.logArchiveMaxMb → --log-archive-max-mb');
  for (const bad of ['history.logFollowLimit=-1', 'history.logArchiveMaxMb=0', 'history.logFollowLimit=many']) {
    const result = helm(['template', 'ss', chartDir, '--set', bad]);
    t.not(result.status, 0, `${bad} refused by the values schema`);
    t.match(result.output, /logFollowLimit|logArchiveMaxMb/);
  }
});

t.test('api.sparkStaticFromImages: an init container per engineVersion copies its Spark UI files for --spark-static-dir', async (t) => {
  const objects = renderChart({ 'api.sparkStaticFromImages': 'true', 'images.3\\.5\\.7': 'my/spark:3.5.7' });
  const pod = named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.template.spec!;
  const inits = pod.initContainers ?? [];
  t.same(inits.map((c) => c.image), ['my/spark:3.5.7', 'apache/spark:4.2.0'], 'each offered version\'s runtime image (images, else imagePattern)');
  t.same(inits.map((c) => c.command?.at(-1)), ['/spark-static/3.5.7', '/spark-static/4.2.0'], 'each into a folder named by its version');
  t.ok(inits.every((c) => c.securityContext?.readOnlyRootFilesystem && c.volumeMounts?.[0]?.name === 'spark-static'), 'read-only root, writing the shared emptyDir only');
  const api = pod.containers[0];
  const at = api.args!.indexOf('--spark-static-dir');
  t.equal(api.args![at + 1], '/var/run/submission-service/spark-static', 'the api reads them (cli/kubernetes.ts)');
  t.same(api.volumeMounts?.find((m) => m.name === 'spark-static'), { name: 'spark-static', mountPath: '/var/run/submission-service/spark-static', readOnly: true });
  t.ok(pod.volumes?.some((v) => v.name === 'spark-static' && v.emptyDir), 'an emptyDir');
  const off = named<V1Deployment>(defaults, 'Deployment', 'submission-service-api')!.spec!.template.spec!;
  t.equal(off.initContainers, undefined, 'off by default: no runtime image pulled for the api');
  t.notOk(off.containers[0].args!.includes('--spark-static-dir'));
  // The script itself, on the local Spark's jars: the same files as local mode extracts.
  const spark = realSpark();
  if (!spark) return;
  const sparkClass = join(dirname(spark.sparkSubmit), 'spark-class');
  const jars = await sparkJars(sparkClass, spark.python);
  const out = mkdtempSync(join(tmpdir(), 'ss-static-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const copied = spawnSync(spark.python ?? 'python3', [...inits[0]!.command!.slice(1, 3), jars, join(out, '3.5.7')], { encoding: 'utf8' });
  t.equal(copied.status, 0, copied.stderr);
  const file = await readVersionedStatic(out, '/static/webui.js', '3.5.7');
  const local = await new LocalSparkStatic({ sparkClass, python: spark.python }).read('/static/webui.js');
  t.ok(file && local && file.body.equals(local.body), 'webui.js as the jar has it');
  t.ok(existsSync(join(out, '3.5.7', 'jquery-3.5.1.min.js')), 'and the rest of the folder');
});

t.test('the processes accept the arguments the chart gives them', async (t) => {
  const cli = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
  for (const name of ['api', 'webhook']) {
    const container = named<V1Deployment>(defaults, 'Deployment', `submission-service-${name}`)!.spec!.template.spec!.containers[0];
    t.same(container.command, ['submission-service', name]);
    // A kubeconfig that does not exist: the process stops right after parsing its arguments.
    const run = spawnSync(process.execPath, ['--import', 'tsx', cli, name, ...container.args!, '--kubeconfig', '/nonexistent/kubeconfig'], { encoding: 'utf8', timeout: 60_000 });
    t.notMatch(run.stderr, /Unknown option|Unexpected argument|takes on or off|argument missing/i, `${name}: arguments parsed`);
    t.match(run.stderr, /nonexistent\/kubeconfig/, `${name}: got as far as loading the kubeconfig`);
  }
});

t.test('no YAML 1.1 boolean words unquoted (Go YAML would read `on` as true)', async (t) => {
  const text = helm(['template', 'ss', chartDir, '--namespace', RELEASE_NAMESPACE]).output;
  const bare = text.split('\n').filter((line) => /^\s*(-|[\w./-]+:)\s+(on|off|yes|no|y|n)\s*$/i.test(line));
  t.same(bare, []);
});

t.test('namespaces and auth', async (t) => {
  t.equal(named(defaults, 'Namespace', 'spark-apps')?.metadata?.annotations?.['helm.sh/resource-policy'], 'keep');
  t.notOk(named(renderChart({ createApplicationsNamespace: 'false' }), 'Namespace', 'spark-apps'));
  const args = (objects: typeof defaults) => named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.template.spec!.containers[0].args!;
  t.match(args(defaults).join(' '), /--auth on/);
  t.ok(named(defaults, 'Secret', 'submission-service-auth'), 'a keys Secret when none is given');
  const off = renderChart({ 'auth.enabled': 'false' });
  t.match(args(off).join(' '), /--auth off/);
  t.notOk(named(off, 'Secret', 'submission-service-auth'));
  const existing = renderChart({ 'auth.existingSecret': 'mine' });
  t.notOk(named(existing, 'Secret', 'submission-service-auth'));
  // The keys are read through the API (watched), not mounted: a mount lags revocations by the kubelet's sync.
  t.match(args(defaults).join(' '), new RegExp(`--keys-secret ${RELEASE_NAMESPACE}/submission-service-auth`));
  t.match(args(existing).join(' '), new RegExp(`--keys-secret ${RELEASE_NAMESPACE}/mine`));
  t.notMatch(args(off).join(' '), /--keys-secret/);
  const apiPod = named<V1Deployment>(existing, 'Deployment', 'submission-service-api')!.spec!.template.spec!;
  t.notOk(apiPod.volumes!.some((v) => v.secret), 'no Secret volume on the api');
  t.same(ofKind<V1Role>(existing, 'Role').find((r) => r.metadata?.name === 'submission-service-api-keys')?.rules?.[0].resourceNames, ['mine']);
});

t.test('Prometheus can scrape: pod annotations by default, a metrics port on the webhook, an optional ServiceMonitor', async (t) => {
  const api = named<V1Deployment>(defaults, 'Deployment', 'submission-service-api')!;
  const webhook = named<V1Deployment>(defaults, 'Deployment', 'submission-service-webhook')!;
  t.match(api.spec!.template.metadata!.annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080', 'prometheus.io/path': '/metrics' });
  t.match(webhook.spec!.template.metadata!.annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090', 'prometheus.io/path': '/metrics' });
  const container = webhook.spec!.template.spec!.containers[0];
  const args = container.args!;
  t.equal(args[args.indexOf('--metrics-port') + 1], '9090', 'the webhook is told its metrics port');
  t.same(container.ports!.find((p) => p.name === 'metrics'), { name: 'metrics', containerPort: 9090 });
  const service = named<V1Service>(defaults, 'Service', 'submission-service-webhook')!;
  t.match(service.spec!.ports!.find((p) => p.name === 'metrics'), { port: 9090, targetPort: 'metrics' });
  t.equal(ofKind(defaults, 'ServiceMonitor').length, 0, 'no ServiceMonitor unless asked (it needs the operator\'s CRD)');

  const quiet = renderChart({ 'metrics.podAnnotations': 'false' });
  t.notOk(named<V1Deployment>(quiet, 'Deployment', 'submission-service-api')!.spec!.template.metadata!.annotations?.['prometheus.io/scrape'], 'annotations can be turned off');

  const monitored = renderChart({ 'metrics.serviceMonitor.enabled': 'true', 'metrics.serviceMonitor.labels.release': 'prom', 'metrics.webhookPort': '9191' });
  const monitors = ofKind<{ metadata: { name: string; labels: Record<string, string> }; spec: any }>(monitored, 'ServiceMonitor');
  t.same(monitors.map((m) => m.metadata.name).sort(), ['submission-service-api', 'submission-service-webhook']);
  for (const monitor of monitors) {
    t.equal(monitor.metadata.labels.release, 'prom', 'extra labels for the Prometheus selector');
    // Each selects exactly the Service of its component, on a port that Service has.
    const selected = ofKind<V1Service>(monitored, 'Service').filter((s) =>
      Object.entries(monitor.spec.selector.matchLabels as Record<string, string>).every(([k, v]) => s.metadata!.labels![k] === v));
    t.equal(selected.length, 1, `${monitor.metadata.name} selects one Service`);
    t.ok(selected[0]!.spec!.ports!.some((p) => p.name === monitor.spec.endpoints[0].port), `${monitor.metadata.name}: port ${monitor.spec.endpoints[0].port} exists`);
    t.equal(monitor.spec.endpoints[0].path, '/metrics');
  }
  t.equal(named<V1Service>(monitored, 'Service', 'submission-service-webhook')!.spec!.ports!.find((p) => p.name === 'metrics')!.port, 9191);
  const bad = helm(['template', 'ss', chartDir, '--set', 'metrics.serviceMonitor.interval=often']);
  t.not(bad.status, 0, 'a bad interval is refused by values.schema.json');
});

t.test('the policy (allowlists of service accounts and secrets) reaches the api and the webhook', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const objects = renderChart({ 'policy.serviceAccounts': '{spark-team-a,spark-team-b}', 'policy.secrets': '{s3-credentials}', 'policy.usersActOnAllApplications': 'true' });
  const config = named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!;
  for (const name of ['api', 'webhook']) {
    const pod = named<V1Deployment>(objects, 'Deployment', `submission-service-${name}`)!.spec!.template;
    const container = pod.spec!.containers[0];
    const file = container.args![container.args!.indexOf('--node-pools') + 1];
    const mount = container.volumeMounts!.find((m) => file?.startsWith(`${m.mountPath}/`));
    t.ok(mount, `${name}: --node-pools ${file} lies in a mounted volume`);
    const volume = pod.spec!.volumes!.find((v) => v.name === mount?.name);
    t.equal(volume?.configMap?.name, config.metadata!.name, `${name}: the volume is the chart's ConfigMap`);
    t.ok(config.data![file.slice(mount!.mountPath.length + 1)], `${name}: which holds that file`);
    t.equal(pod.metadata!.annotations!['checksum/config'], named<V1Deployment>(objects, 'Deployment', 'submission-service-webhook')!.spec!.template.metadata!.annotations!['checksum/config'],
      `${name}: rolled when the ConfigMap changes`);
  }
  // What `submission-service api|webhook --node-pools FILE` reads from the rendered file.
  const file = join(dir, 'node-pools.json');
  writeFileSync(file, config.data!['node-pools.json']);
  t.same(rulesFrom(file, 'spark-apps').policy, {
    serviceAccounts: ['spark-team-a', 'spark-team-b'], secrets: ['s3-credentials'], usersActOnAllApplications: true, refuseLauncherEnvironment: false, kubernetesProperties: [],
  }, 'the allowlists and the acting rule, as set');
  writeFileSync(file, named<V1ConfigMap>(defaults, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
  t.same(rulesFrom(file, 'spark-apps').policy, { serviceAccounts: [], secrets: [], usersActOnAllApplications: false, refuseLauncherEnvironment: false, kubernetesProperties: [] },
    'by default: no other service account, no secret, users act on their own applications');
  const bad = helm(['template', 'ss', chartDir, '--set', 'policy.secret={x}']);
  t.not(bad.status, 0, 'a misspelt policy key is refused by values.schema.json');
  t.match(bad.output, /secret/);
});

t.test('the applications namespace enforces Pod Security baseline and reports restricted', async (t) => {
  const labels = (objects: typeof defaults) => named(objects, 'Namespace', 'spark-apps')?.metadata?.labels ?? {};
  t.match(labels(defaults), {
    'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/enforce-version': 'latest',
    'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit': 'restricted',
  });
  t.match(labels(renderChart({ 'applicationsPodSecurity.enforce': 'restricted' })), { 'pod-security.kubernetes.io/enforce': 'restricted' });
  const bad = helm(['template', 'ss', chartDir, '--set', 'applicationsPodSecurity.enforce=lenient']);
  t.not(bad.status, 0, 'a level Pod Security does not know is refused by values.schema.json');
  t.match(bad.output, /applicationsPodSecurity/);
});
