// The chart's boundaries between applications (issue 25), rendered by Helm itself: NetworkPolicies
// that let only the service's pods reach a driver's Spark UI and the History Server, and an
// application's pods only its own pods and the service's (the api's per-application policy beside
// the chart's), judged by a small evaluator of NetworkPolicy's own rules (the test bed's CNI enforces none, see
// manifests/README.md); that no application's pod may wear the labels those policies admit the
// service's pods by (domain/service-identity.ts); and the object-store keys: drivers get their own Secret, never the
// controller's, executors none, and the install notes say in plain words what is still shared.
import type { V1ConfigMap, V1Deployment, V1NetworkPolicy, V1NetworkPolicyPeer, V1NetworkPolicyPort, V1Role } from '@kubernetes/client-node';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import t from 'tap';
import { rulesFrom } from '../../cli/rules.js';
import { appNetworkPolicy } from '../../cluster/kubernetes/app-network-policy.js';
import { admitPod, applyDefaults, bareDriverPod, SERVICE_IDENTITY_LABELS } from '../../domain/index.js';
import { RELEASE_NAMESPACE, chartDir, helm, named, ofKind, renderChart } from './helm.js';

const HISTORY = { 'history.eventLogDir': 's3a://logs/spark-events', 'history.server.image': 'spark-runtime:1' };
const APPS = 'spark-apps';

interface Client { namespace: string; labels: Record<string, string> }

const matches = (selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined, labels: Record<string, string>) =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v)
  && (selector?.matchExpressions ?? []).every((e) => e.operator === 'In' && e.values!.includes(labels[e.key] ?? '\0'));

function peerAdmits(peer: V1NetworkPolicyPeer, policyNamespace: string, client: Client): boolean {
  const namespaceOk = peer.namespaceSelector ? matches(peer.namespaceSelector, { 'kubernetes.io/metadata.name': client.namespace }) : client.namespace === policyNamespace;
  return namespaceOk && (!peer.podSelector || matches(peer.podSelector, client.labels));
}

const portAdmits = (rule: V1NetworkPolicyPort, port: number) =>
  (rule.protocol ?? 'TCP') === 'TCP' && port >= Number(rule.port) && port <= (rule.endPort ?? Number(rule.port));

/** Whether `client` may open TCP `port` on a pod with `podLabels` in `namespace`, by these policies (NetworkPolicy's semantics: selected pods admit only what some rule allows). */
function reachable(policies: V1NetworkPolicy[], namespace: string, podLabels: Record<string, string>, client: Client, port: number): boolean {
  const selecting = policies.filter((p) => p.metadata!.namespace === namespace && matches(p.spec!.podSelector, podLabels));
  if (selecting.length === 0) return true;
  return selecting.some((p) => (p.spec!.ingress ?? []).some((rule) => {
    // The client library's typed reading names the field `_from`; a plain YAML reading `from`.
    const from = rule._from ?? (rule as { from?: V1NetworkPolicyPeer[] }).from;
    return (!from || from.some((peer) => peerAdmits(peer, namespace, client)))
      && (!rule.ports || rule.ports.some((r) => portAdmits(r, port)));
  }));
}

const component = (name: string) => ({ 'app.kubernetes.io/name': 'submission-service', 'app.kubernetes.io/instance': 'ss', 'app.kubernetes.io/component': name });
const api: Client = { namespace: RELEASE_NAMESPACE, labels: component('api') };
const gateway: Client = { namespace: RELEASE_NAMESPACE, labels: component('gateway') };
const otherDriver: Client = { namespace: APPS, labels: { 'spark-role': 'driver', 'submission-service/app-name': 'b-1' } };
const executor: Client = { namespace: APPS, labels: { 'spark-role': 'executor', 'submission-service/app-name': 'a-1' } };
const otherExecutor: Client = { namespace: APPS, labels: { 'spark-role': 'executor', 'submission-service/app-name': 'b-1' } };
const elsewhere: Client = { namespace: 'team-x', labels: component('api') };
const driverLabels = { 'spark-role': 'driver', 'submission-service/app-name': 'a-1' };

t.test('an application\'s pods answer the service\'s pods and their own application\'s, no other application\'s', async (t) => {
  const owner = { apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'a-1', uid: 'u-1' };
  const own = appNetworkPolicy('a-1', owner);
  const policies = [...ofKind<V1NetworkPolicy>(renderChart(HISTORY), 'NetworkPolicy'), { ...own, metadata: { ...own.metadata, namespace: APPS } } as V1NetworkPolicy];
  const ui = (client: Client) => reachable(policies, APPS, driverLabels, client, 4040);
  t.ok(ui(api), 'the api\'s UI proxy reaches 4040');
  t.ok(ui(gateway), 'the notebook service reaches 4040');
  t.notOk(ui(otherDriver), 'another application\'s driver does not');
  t.notOk(ui(elsewhere), 'a pod labelled like the api in another namespace does not');
  for (const port of [7078, 7079, 4041, 15002, 40000]) {
    t.ok(reachable(policies, APPS, driverLabels, executor, port), `its own executors reach the driver's port ${port}`);
    t.ok(reachable(policies, APPS, driverLabels, gateway, port), `so does the notebook service (kernels, Connect): ${port}`);
    t.notOk(reachable(policies, APPS, driverLabels, otherDriver, port), `another application's driver does not: ${port}`);
    t.notOk(reachable(policies, APPS, driverLabels, otherExecutor, port), `nor its executors: ${port}`);
  }
  t.ok(reachable(policies, APPS, executor.labels, { namespace: APPS, labels: driverLabels }, 40000), 'the driver reaches its executors');
  t.notOk(reachable(policies, APPS, executor.labels, otherDriver, 40000), 'another application\'s driver does not');
  t.same(own.metadata.ownerReferences, [{ ...owner, controller: false }], 'the application\'s policy goes with its Application');
});

t.test('the api makes each application\'s policy and its controller keeps it, with the right to create and watch them', async (t) => {
  const objects = renderChart(HISTORY);
  const args = named<V1Deployment>(objects, 'Deployment', 'submission-service-api')!.spec!.template.spec!.containers[0]!.args!;
  t.ok(args.includes('--app-network-policies'), 'the api is told to');
  const role = named<V1Role>(objects, 'Role', 'submission-service-api')!;
  t.ok(role.rules!.some((r) => r.apiGroups!.includes('networking.k8s.io') && r.resources!.includes('networkpolicies') && r.verbs.join() === 'create,list,watch'), 'and may create and watch them (never change or delete them)');
  const off = renderChart({ ...HISTORY, 'networkPolicy.enabled': 'false' });
  t.notOk(named<V1Deployment>(off, 'Deployment', 'submission-service-api')!.spec!.template.spec!.containers[0]!.args!.includes('--app-network-policies'), 'networkPolicy.enabled=false: not');
  t.notOk(named<V1Role>(off, 'Role', 'submission-service-api')!.rules!.some((r) => r.resources!.includes('networkpolicies')), 'nor the right');
});

t.test('a Spark Connect session\'s server (15002, no authentication of its own) answers only the service\'s pods', async (t) => {
  const policies = ofKind<V1NetworkPolicy>(renderChart(HISTORY), 'NetworkPolicy');
  const connect = (client: Client) => reachable(policies, APPS, driverLabels, client, 15002);
  t.ok(connect(api), 'the api\'s relay reaches it');
  t.notOk(connect(otherDriver), 'another application\'s driver does not');
  t.notOk(connect(executor), 'an executor does not');
  t.notOk(connect(elsewhere), 'a pod labelled like the api in another namespace does not');
  // The chart alone closes every port of a driver to other pods; each application's own policy
  // (--app-network-policies) opens them to its own executors, never 15002 to anyone but the service.
  for (const port of [15001, 15003]) t.notOk(reachable(policies, APPS, driverLabels, executor, port), `nor the ports beside it from another pod (${port}): the application's own policy opens them to its pods`);
});

t.test('the History Server answers only the api', async (t) => {
  const policies = ofKind<V1NetworkPolicy>(renderChart(HISTORY), 'NetworkPolicy');
  const history = (client: Client) => reachable(policies, RELEASE_NAMESPACE, component('history'), client, 18080);
  t.ok(history(api), 'the api\'s dashboard proxy reaches it');
  t.notOk(history(otherDriver), 'a driver does not');
  t.notOk(history(gateway), 'the notebook service does not');
  t.notOk(history({ namespace: RELEASE_NAMESPACE, labels: { run: 'debug' } }), 'another pod of the release namespace does not');
  t.notOk(named(renderChart(), 'NetworkPolicy', 'submission-service-history'), 'no History Server, no policy for it');
  t.same(ofKind(renderChart({ ...HISTORY, 'networkPolicy.enabled': 'false' }), 'NetworkPolicy'), [], 'networkPolicy.enabled=false installs none');
});

t.test('no application\'s pod passes for the service\'s: the keys its policies admit the api and gateway by are refused by admission', async (t) => {
  // The one case where the namespace does not tell them apart: applications in the release's own.
  const objects = renderChart({ ...HISTORY, applicationsNamespace: RELEASE_NAMESPACE, createApplicationsNamespace: 'false' });
  const policies = ofKind<V1NetworkPolicy>(objects, 'NetworkPolicy');
  const deployment = (name: string) => named<V1Deployment>(objects, 'Deployment', `submission-service-${name}`)!.spec!;
  for (const name of ['api', 'gateway']) {
    t.same(Object.keys(deployment(name).selector.matchLabels!).sort(), [...SERVICE_IDENTITY_LABELS].sort(), `the ${name}'s selector labels are the domain's list`);
  }
  const peers = policies.flatMap((p) => (p.spec!.ingress ?? []).flatMap((rule) => rule._from ?? (rule as { from?: V1NetworkPolicyPeer[] }).from ?? []));
  t.ok(peers.length >= 2);
  for (const peer of peers.filter((p) => p.podSelector)) {
    const required = [...Object.keys(peer.podSelector!.matchLabels ?? {}), ...(peer.podSelector!.matchExpressions ?? []).filter((e) => e.operator === 'In').map((e) => e.key)];
    t.ok(required.some((key) => SERVICE_IDENTITY_LABELS.includes(key)), `every peer requires one of the service's identity keys: ${JSON.stringify(peer.podSelector)}`);
  }
  // The api's pod labels, as the chart writes them, on a pod a driver's code or a submission could make.
  const worn = deployment('api').template.metadata!.labels!;
  const dressed = { ...worn, 'spark-role': 'executor', 'submission-service/app-name': 'a-1' };
  const plain = Object.fromEntries(Object.entries(dressed).filter(([key]) => !SERVICE_IDENTITY_LABELS.includes(key)));
  const asClient = (labels: Record<string, string>): Client => ({ namespace: RELEASE_NAMESPACE, labels });
  for (const [what, labels, port] of [['a driver\'s UI', driverLabels, 4040], ['a Connect server', driverLabels, 15002], ['the History Server', component('history'), 18080]] as const) {
    t.ok(reachable(policies, RELEASE_NAMESPACE, labels, asClient(dressed), port), `dressed as the api, a pod would reach ${what} (${port})`);
    t.notOk(reachable(policies, RELEASE_NAMESPACE, labels, asClient(plain), port), `without the identity keys it does not: ${what}`);
  }
  // Admission under the chart's own rules (its node-pool file).
  const context = { rules: rulesOf(objects, t, RELEASE_NAMESPACE), templates: () => undefined, applications: () => ({}), newAppName: (job: string) => job };
  const executor = admitPod({ metadata: { name: 'a-1-exec-1', namespace: RELEASE_NAMESPACE, labels: dressed }, spec: { containers: [{ name: 'e' }] } }, context);
  t.equal(executor.outcome === 'refused' && executor.status, 403, 'admission refuses the executor dressed so');
  const driver = admitPod(bareDriverPod({ appName: 'a-2', jobName: 'a', namespace: RELEASE_NAMESPACE, labels: worn }), context);
  t.equal(driver.outcome === 'refused' && driver.status, 400, 'and the driver');
});

function rulesOf(objects: ReturnType<typeof renderChart>, t: { teardown(fn: () => void): void }, namespace = APPS) {
  const dir = mkdtempSync(join(tmpdir(), 'ss-isolation-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'node-pools.json');
  writeFileSync(file, named<V1ConfigMap>(objects, 'ConfigMap', 'submission-service-config')!.data!['node-pools.json']);
  return rulesFrom(file, namespace);
}

const secretsOf = (objects: ReturnType<typeof renderChart>, deployment: string) =>
  named<V1Deployment>(objects, 'Deployment', deployment)!.spec!.template.spec!.containers[0]!.env!
    .filter((e) => e.name.startsWith('AWS_')).map((e) => e.valueFrom?.secretKeyRef?.name);

t.test('drivers get their own object-store key, never the controller\'s; executors none', async (t) => {
  const objects = renderChart({ ...HISTORY, 'history.credentialsSecret': 'controller-s3', 'history.driverCredentialsSecret': 'drivers-s3' });
  const rules = rulesOf(objects, t);
  t.equal(rules.eventLog?.s3?.credentialsSecret, 'drivers-s3', 'admission hands drivers the drivers\' Secret');
  t.same(secretsOf(objects, 'submission-service-api'), ['controller-s3', 'controller-s3'], 'the api (log archive, index) holds the controller\'s key');
  t.same(secretsOf(objects, 'submission-service-history'), ['controller-s3', 'controller-s3'], 'so does the History Server');
  const conf = applyDefaults({}, rules).engineConf!;
  t.same(Object.keys(conf).filter((k) => k.includes('secretKeyRef')), [], 'executors get no key');
});

t.test('driverKeys versitygw: admission gives each driver its own Secret and folder', async (t) => {
  const rules = rulesOf(renderChart({ ...HISTORY, 'history.driverKeys': 'versitygw' }), t);
  t.match(rules.eventLog?.s3?.incomingDir, /^s3a:\/\/[a-z0-9.-]+\/spark-incoming$/, 'drivers write into folders under spark-incoming');
  t.equal(rulesOf(renderChart(HISTORY), t).eventLog?.s3?.incomingDir, undefined, 'shared (the default): no folders, the shared key');
});

t.test('the install notes say in plain words what drivers can reach in object storage', async (t) => {
  // Helm prints NOTES.txt only at install (which wants a cluster): a copy of the chart renders it
  // as a template, the text wrapped in a define and handed out as one JSON string.
  const dir = mkdtempSync(join(tmpdir(), 'ss-notes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(chartDir, dir, { recursive: true });
  const text = readFileSync(join(chartDir, 'templates', 'NOTES.txt'), 'utf8');
  writeFileSync(join(dir, 'templates', 'notes-as-object.yaml'), `{{- define "test.notes" }}${text}{{- end }}\nkind: Notes\ntext: {{ include "test.notes" . | toJson }}\n`);
  const notes = (sets: Record<string, string>) => {
    const args = Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
    const result = helm(['template', 'ss', dir, '--namespace', RELEASE_NAMESPACE, '--show-only', 'templates/notes-as-object.yaml', ...args]);
    if (result.status !== 0) throw new Error(`helm template failed:\n${result.output}`);
    return String((JSON.parse(JSON.stringify(loadYaml(result.output))) as { text: string }).text).replace(/\s+/g, ' ');
  };
  t.match(notes(HISTORY), /Object storage is NOT separated per application: drivers get history\.credentialsSecret, the same key the controller uses/);
  const own = notes({ ...HISTORY, 'history.driverCredentialsSecret': 'drivers-s3' });
  t.match(own, /Drivers get drivers-s3, not the controller's key/);
  t.match(own, /this chart cannot give each application a key of its own/);
  t.match(own, /it does not use the STS session policies of AWS S3, MinIO or Ceph/, 'and says which stores could, and that it does not use them');
  t.match(notes(HISTORY), /With another store \(AWS S3, MinIO, Ceph\) this chart cannot give each application a key of its own: it does not use their STS session policies/);
  t.notMatch(notes({ ...HISTORY, 'history.driverKeys': 'versitygw' }), /cannot give each application/, 'with a key per application: no such warning');
  const perApp = notes({ ...HISTORY, 'history.driverKeys': 'versitygw' });
  t.match(perApp, /Object storage is separated per application: the controller makes each driver a key of its own \(versitygw admin API\)/);
  t.match(perApp, /only that application's folder under s3a:\/\/[a-z0-9.-]+\/spark-incoming\//, 'and names where the folders are');
  t.notMatch(perApp, /NOT separated/);
  t.match(notes(HISTORY), /set history\.driverKeys=versitygw for a key per application/, 'the shared default says what would separate them');
  t.match(notes({ ...HISTORY, 'networkPolicy.enabled': 'false' }), /any pod in the cluster can open every driver's Spark UI/);
  t.match(notes(HISTORY), /take effect only if the cluster's network plugin enforces NetworkPolicy/);
});
