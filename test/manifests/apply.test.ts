// The chart and the CRDs on a real kube-apiserver (test/cluster): every object is accepted,
// the CRDs keep what our schemas allow and refuse the rest, the webhook configuration selects
// the pods it should, and RBAC grants what manifests/README.md says, judged by the apiserver.
import {
  ApiextensionsV1Api, AuthorizationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi, loadAllYaml,
  type V1ResourceAttributes,
} from '@kubernetes/client-node';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CRD_GROUP, CRD_VERSION, allCrds } from '../../schemas/crd.js';
import { SecretKeyStore } from '../../submit-api/auth/secret-key-store.js';
import { RELEASE_NAMESPACE, chartDir, renderChart } from './helm.js';
import { type KubeClients } from '../../cluster/kubernetes/client.js';
import { clientsAs, eventually } from '../helpers/kubernetes.js';
import { type Testbed, startTestbed, testbedUnavailable } from './testbed.js';

const APPS = 'spark-apps';
const crdDir = join(chartDir, 'crds');
/** Helm's install order, for the kinds the chart has. */
const ORDER = ['Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'ServiceAccount', 'Secret', 'ConfigMap', 'ClusterRole', 'ClusterRoleBinding',
  'Role', 'RoleBinding', 'Service', 'Deployment', 'Job', 'Ingress', 'MutatingWebhookConfiguration',
  // Kinds Helm does not order come last.
  'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];

const skip = testbedUnavailable();
if (skip) {
  t.plan(0, skip);
} else {
  let bed: Testbed;
  t.before(async () => { bed = await startTestbed(); });
  t.teardown(async () => { await bed?.stop(); });

  const fullConfig = {
    type: 'Python', engineVersion: '3.5.7', pythonVersion: '3', mode: 'cluster', image: 'apache/spark:3.5.7',
    mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py', mainClass: 'x.Main', arguments: ['10'],
    engineConf: { 'spark.dynamicAllocation.enabled': 'true' },
    driver: { cores: 1, coreRequest: '710m', memory: '2043m', serviceAccount: 'spark-driver', labels: { team: 'a' }, env: { A: 'b' }, annotations: { n: 'v' } },
    executor: { cores: 2, coreRequest: '1700m', coreLimit: '2', memory: '4086m', instances: 1, secrets: [{ name: 'gcs', path: '/mnt/gcs', secretType: 'CloudServiceAccount' }] },
    restartPolicy: { type: 'Never' },
  };

  t.test('CRDs are accepted (structural) and established', async (t) => {
    const objects = KubernetesObjectApi.makeApiClient(bed.kc);
    const crds = bed.kc.makeApiClient(ApiextensionsV1Api);
    // The files Helm installs, read as typed objects: client-node serializes by its model's
    // names (`_enum` for `enum`, ...), so a plain object would silently lose such keywords.
    const files = readdirSync(crdDir).filter((f) => f.endsWith('.yaml'));
    t.same(files.sort(), allCrds().map((c) => `${(c.metadata as { name: string }).name}.yaml`).sort());
    for (const file of files) {
      for (const crd of loadAllYaml(readFileSync(join(crdDir, file), 'utf8'))) await objects.create(crd);
    }
    for (const crd of allCrds()) {
      const name = (crd.metadata as { name: string }).name;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const read = await crds.readCustomResourceDefinition({ name });
        const conditions = read.status?.conditions ?? [];
        const established = conditions.some((c) => c.type === 'Established' && c.status === 'True');
        const nonStructural = conditions.find((c) => c.type === 'NonStructuralSchema' && c.status === 'True');
        t.notOk(nonStructural, `${name} is structural`);
        if (established) break;
        if (Date.now() > deadline) throw new Error(`${name} not established: ${JSON.stringify(conditions)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      t.pass(`${name} established`);
    }
  });

  t.test('every object of the chart is accepted by the apiserver', async (t) => {
    const objects = KubernetesObjectApi.makeApiClient(bed.kc);
    const rendered = renderChart({ 'ingress.enabled': 'true', 'ingress.host': 'spark.example.com', 'ingress.className': 'nginx' });
    const unknown = rendered.filter((o) => !ORDER.includes(o.kind!));
    t.same(unknown.map((o) => o.kind), [], 'every kind has its place in the install order');
    rendered.sort((a, b) => ORDER.indexOf(a.kind!) - ORDER.indexOf(b.kind!));
    await objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NAMESPACE } });
    for (const object of rendered) {
      try {
        await objects.create(object);
      } catch (error) {
        t.fail(`${object.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name}: ${(error as { body?: string }).body ?? String(error)}`);
      }
    }
    t.pass(`${rendered.length} objects created`);
  });

  t.test('ConfigTemplate and Application custom resources', async (t) => {
    const custom = bed.kc.makeApiClient(CustomObjectsApi);
    const at = (plural: string) => ({ group: CRD_GROUP, version: CRD_VERSION, namespace: APPS, plural });

    await custom.createNamespacedCustomObject({ ...at('configtemplates'), body: {
      apiVersion: `${CRD_GROUP}/${CRD_VERSION}`, kind: 'ConfigTemplate', metadata: { name: 'full' }, spec: { config: fullConfig },
    } });
    const template = await custom.getNamespacedCustomObject({ ...at('configtemplates'), name: 'full' }) as { spec: unknown };
    t.same(template.spec, { config: fullConfig }, 'every field our schema allows survives pruning');

    const appName = 'pi-20250101-120000-abcde';
    await custom.createNamespacedCustomObject({ ...at('applications'), body: {
      apiVersion: `${CRD_GROUP}/${CRD_VERSION}`, kind: 'Application', metadata: { name: appName },
      spec: { jobName: 'pi', configTemplateName: '', config: fullConfig },
      status: { state: 'RUNNING' }, // ignored: status is a subresource
    } });
    const created = await custom.getNamespacedCustomObject({ ...at('applications'), name: appName }) as Record<string, any>;
    t.notOk(created.status, 'status is set through its subresource only');
    created.status = { state: 'RUNNING', startedAt: '2025-01-01T12:00:05Z', endedAt: null, runningExecutors: 2 };
    const updated = await custom.replaceNamespacedCustomObjectStatus({ ...at('applications'), name: appName, body: created }) as Record<string, any>;
    t.same(updated.status, created.status, 'nullable endedAt and the rest kept');

    const refusals: [string, Record<string, unknown>][] = [
      ['unknown state', { ...updated, status: { ...updated.status, state: 'SLEEPING' } }],
      ['negative executors', { ...updated, status: { ...updated.status, runningExecutors: -1 } }],
    ];
    for (const [why, body] of refusals) {
      await t.rejects(custom.replaceNamespacedCustomObjectStatus({ ...at('applications'), name: appName, body }), { code: 422 }, why);
    }
    await t.rejects(custom.createNamespacedCustomObject({ ...at('configtemplates'), body: {
      apiVersion: `${CRD_GROUP}/${CRD_VERSION}`, kind: 'ConfigTemplate', metadata: { name: 'bad' },
      spec: { config: { executor: { cores: 0, memory: '4 GB' } } },
    } }), { code: 422 }, 'the pod-config constraints hold in the cluster too');
    await t.rejects(custom.createNamespacedCustomObject({ ...at('applications'), body: {
      apiVersion: `${CRD_GROUP}/${CRD_VERSION}`, kind: 'Application', metadata: { name: 'no-job' }, spec: { config: {} },
    } }), { code: 422 }, 'jobName and configTemplateName are required');
  });

  t.test('the webhook configuration selects our pods only (webhook not running: Fail refuses them)', async (t) => {
    const core = bed.kc.makeApiClient(CoreV1Api);
    const pod = (name: string, labels: Record<string, string>) => ({
      metadata: { name, labels },
      spec: { serviceAccountName: 'spark-driver', automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] },
    });
    await core.createNamespacedPod({ namespace: APPS, body: pod('plain', { app: 'other' }) });
    t.pass('a pod without our labels is not sent to the webhook');
    await t.rejects(core.createNamespacedPod({ namespace: APPS, body: pod('ours', { 'submission-service/job-name': 'pi' }) }),
      { message: /pods\.submission-service\.webhook/ }, 'a labelled pod is refused');
    await t.rejects(core.createNamespacedPod({ namespace: APPS, body: pod('exec', { 'spark-role': 'executor', 'spark-app-selector': 'spark-1' }) }),
      { message: /executors\.submission-service\.webhook/ }, 'an executor is refused');
    await core.createNamespace({ body: { metadata: { name: 'elsewhere' } } });
    await core.createNamespacedServiceAccount({ namespace: 'elsewhere', body: { metadata: { name: 'default' } } });
    await core.createNamespacedPod({ namespace: 'elsewhere', body: { ...pod('ours', { 'submission-service/job-name': 'pi' }), spec: { ...pod('x', {}).spec, serviceAccountName: 'default' } } });
    t.pass('other namespaces are not affected');
  });

  t.test('a driver\'s account creates, changes and deletes only the executors, ConfigMaps and PVCs of the pod its token is bound to (ValidatingAdmissionPolicy), with only the verbs Spark uses', async (t) => {
    const admin: KubeClients = { kc: bed.kc, core: bed.kc.makeApiClient(CoreV1Api), custom: bed.kc.makeApiClient(CustomObjectsApi), server: bed.kc.getCurrentCluster()!.server };
    const spec = { serviceAccountName: 'spark-driver', automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] };
    const driver = async (name: string) => (await admin.core.createNamespacedPod({ namespace: APPS, body: { metadata: { name }, spec } })).metadata!;
    const [a, b] = [await driver('drv-a'), await driver('drv-b')];
    const asA = await clientsAs(admin, APPS, 'spark-driver', { name: a.name!, uid: a.uid! });
    // Spark's executors are not sent to the webhook here: no spark-app-selector label (the webhook is not running).
    const executor = (name: string, owner: typeof a, labels: Record<string, string> = { 'spark-role': 'executor' }) => ({
      metadata: { name, labels, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner.name!, uid: owner.uid! }] }, spec,
    });
    const outcome = (call: () => Promise<unknown>) => call().then(() => 'done', (error: { code?: number; body?: string }) => `${error.code} ${error.body ?? ''}`);
    const sneaky = { metadata: { name: 'sneaky', labels: { 'submission-service/app-name': 'drv-b' }, ownerReferences: executor('x', a).metadata.ownerReferences }, spec };
    // The policy reaches the apiserver's admission a moment after it is created: until then the pod is made, and removed again.
    const plain = await eventually(async () => {
      const answer = await outcome(() => asA.core.createNamespacedPod({ namespace: APPS, body: sneaky }));
      if (answer === 'done') await admin.core.deleteNamespacedPod({ namespace: APPS, name: 'sneaky', gracePeriodSeconds: 0 });
      return answer;
    }, (answer) => answer !== 'done', { what: 'the policy in force' });
    t.match(plain, /^403 .*may create executor pods only/, 'a pod that is not an executor: refused');
    t.match(await outcome(() => asA.core.createNamespacedPod({ namespace: APPS, body: executor('a-for-b', b) })), /^403 .*only the executor pods/, 'an executor owned by another driver: refused');
    t.equal(await outcome(() => asA.core.createNamespacedPod({ namespace: APPS, body: executor('drv-a-exec-1', a) })), 'done', 'its own executor: created');
    t.match(await outcome(() => asA.core.deleteNamespacedPod({ namespace: APPS, name: 'drv-b' })), /^403 /, 'another run\'s driver: not deleted');
    t.equal(await outcome(() => asA.core.deleteNamespacedPod({ namespace: APPS, name: 'drv-a-exec-1' })), 'done', 'its own executor: deleted');
    const configMap = (name: string, owner: typeof a) => ({ metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner.name!, uid: owner.uid! }] }, data: { k: 'v' } });
    await admin.core.createNamespacedConfigMap({ namespace: APPS, body: configMap('conf-of-b', b) });
    // Spark deletes its ConfigMaps by selector (deletecollection; the apiserver admits each one it would delete).
    const deleteConfigMaps = (name: string) => () => asA.core.deleteCollectionNamespacedConfigMap({ namespace: APPS, fieldSelector: `metadata.name=${name}` });
    t.match(await outcome(deleteConfigMaps('conf-of-b')), /^403 .*its own driver pod owns/, 'another run\'s ConfigMap: not deleted');
    t.equal(await outcome(() => asA.core.createNamespacedConfigMap({ namespace: APPS, body: configMap('conf-of-a', a) })), 'done', 'its own ConfigMap (an executor\'s conf): created');
    t.equal(await outcome(deleteConfigMaps('conf-of-a')), 'done', 'and deleted');
    // Creating: only owned by its own pod (name and uid), so no name squatted for another run, nothing outliving the driver.
    const unowned = { metadata: { name: 'squat' }, data: { k: 'v' } };
    t.match(await outcome(() => asA.core.createNamespacedConfigMap({ namespace: APPS, body: unowned })), /^403 .*its own driver pod owns/, 'a ConfigMap owned by nobody: refused');
    t.match(await outcome(() => asA.core.createNamespacedConfigMap({ namespace: APPS, body: configMap('conf-for-b', b) })), /^403 /, 'a ConfigMap owned by another driver: refused');
    const wrongUid = { metadata: { name: 'conf-uid', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: a.name!, uid: b.uid! }] } };
    t.match(await outcome(() => asA.core.createNamespacedConfigMap({ namespace: APPS, body: wrongUid })), /^403 /, 'its pod\'s name with another uid: refused');
    const pvc = (name: string, owner?: typeof a) => ({
      metadata: { name, ownerReferences: owner ? [{ apiVersion: 'v1', kind: 'Pod', name: owner.name!, uid: owner.uid! }] : undefined },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    t.match(await outcome(() => asA.core.createNamespacedPersistentVolumeClaim({ namespace: APPS, body: pvc('pvc-squat') })), /^403 .*its own driver pod owns/, 'a PVC owned by nobody: refused');
    t.match(await outcome(() => asA.core.createNamespacedPersistentVolumeClaim({ namespace: APPS, body: pvc('pvc-for-b', b) })), /^403 /, 'a PVC owned by another driver: refused');
    t.equal(await outcome(() => asA.core.createNamespacedPersistentVolumeClaim({ namespace: APPS, body: pvc('drv-a-exec-1-pvc-0', a) })), 'done', 'its own on-demand PVC: created');
    t.equal(await outcome(() => asA.core.deleteCollectionNamespacedPersistentVolumeClaim({ namespace: APPS, fieldSelector: 'metadata.name=drv-a-exec-1-pvc-0' })), 'done', 'and deleted by selector (Spark\'s cleanup)');
    // RBAC: the verbs Spark's driver does not use are gone (403 whatever the object).
    const service = { metadata: { name: 'svc-a', ownerReferences: configMap('x', a).metadata.ownerReferences }, spec: { ports: [{ port: 80 }] } };
    t.match(await outcome(() => asA.core.createNamespacedService({ namespace: APPS, body: service })), /^403 .*forbidden/, 'a Service, even its own: no create');
    t.equal(await outcome(() => asA.core.deleteCollectionNamespacedService({ namespace: APPS, labelSelector: 'spark-app-selector=spark-a' })), 'done', 'Services deleted by label (Spark\'s cleanup): allowed');
    for (const [what, call] of [
      ['list ConfigMaps', () => asA.core.listNamespacedConfigMap({ namespace: APPS })],
      ['get a ConfigMap', () => asA.core.readNamespacedConfigMap({ namespace: APPS, name: 'conf-of-b' })],
      ['delete a ConfigMap by name', () => asA.core.deleteNamespacedConfigMap({ namespace: APPS, name: 'conf-of-b' })],
      ['list Services', () => asA.core.listNamespacedService({ namespace: APPS })],
      ['get a Service', () => asA.core.readNamespacedService({ namespace: APPS, name: 'kubernetes' })],
      ['get a PVC', () => asA.core.readNamespacedPersistentVolumeClaim({ namespace: APPS, name: 'pvc-x' })],
    ] as const) {
      t.match(await outcome(call), /^403 .*forbidden/, `${what}: no RBAC verb`);
    }
    t.equal(await outcome(() => asA.core.listNamespacedPersistentVolumeClaim({ namespace: APPS, labelSelector: 'spark-app-selector=spark-a' })), 'done', 'PVCs listed by label (Spark\'s reuse): allowed');
    const unbound = await clientsAs(admin, APPS, 'spark-driver');
    t.match(await outcome(() => unbound.core.createNamespacedPod({ namespace: APPS, body: executor('drv-a-exec-2', a) })), /^403 /, 'a token bound to no pod creates none');
  });

  t.test('RBAC, as the apiserver judges it (SubjectAccessReview)', async (t) => {
    const authz = bed.kc.makeApiClient(AuthorizationV1Api);
    const sa = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;
    const api = sa(RELEASE_NAMESPACE, 'submission-service-api');
    const webhook = sa(RELEASE_NAMESPACE, 'submission-service-webhook');
    const gateway = sa(RELEASE_NAMESPACE, 'submission-service-gateway');
    const driver = sa(APPS, 'spark-driver');
    const mwc = `submission-service-${RELEASE_NAMESPACE}`;
    const ss = (resource: string) => ({ group: CRD_GROUP, resource });

    const cases: [string, V1ResourceAttributes, boolean][] = [
      [api, { namespace: APPS, verb: 'create', resource: 'pods' }, true],
      [api, { namespace: APPS, verb: 'delete', resource: 'pods' }, true],
      [api, { namespace: APPS, verb: 'get', resource: 'pods', subresource: 'log' }, true],
      [api, { namespace: APPS, verb: 'create', ...ss('applications') }, true],
      [api, { namespace: APPS, verb: 'update', ...ss('applications'), subresource: 'status' }, true],
      [api, { namespace: APPS, verb: 'delete', ...ss('configtemplates') }, true],
      [api, { namespace: 'kube-system', verb: 'create', resource: 'pods' }, false],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'create', resource: 'pods' }, false],
      [api, { namespace: APPS, verb: 'get', resource: 'secrets' }, false],
      [api, { namespace: APPS, verb: 'create', resource: 'secrets' }, true], // kernels' launcher Secrets, Connect servers' token Secrets
      [api, { namespace: APPS, verb: 'list', resource: 'secrets' }, false],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'get', resource: 'secrets' }, false],
      // The keys Secret, by name: a list or watch with fieldSelector metadata.name=<it> is judged
      // as a request for that name (the real requests are made below, as the ServiceAccount).
      [api, { namespace: RELEASE_NAMESPACE, verb: 'get', resource: 'secrets', name: 'submission-service-auth' }, true],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'list', resource: 'secrets', name: 'submission-service-auth' }, true],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'watch', resource: 'secrets', name: 'submission-service-auth' }, true],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'list', resource: 'secrets' }, false],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'watch', resource: 'secrets' }, false],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'update', resource: 'secrets', name: 'submission-service-auth' }, false],
      [api, { namespace: RELEASE_NAMESPACE, verb: 'get', resource: 'secrets', name: 'submission-service-webhook-cert' }, false],
      [api, { namespace: APPS, verb: 'list', resource: 'secrets', name: 'submission-service-auth' }, false],
      [api, { namespace: APPS, verb: 'create', resource: 'pods', subresource: 'exec' }, false],
      [api, { namespace: APPS, verb: 'deletecollection', resource: 'pods' }, true],
      // The log archive's finalizer: removed from driver and executor pods once their logs are kept.
      [api, { namespace: APPS, verb: 'patch', resource: 'pods' }, true],
      [api, { namespace: APPS, verb: 'deletecollection', resource: 'services' }, false],
      [api, { verb: 'list', resource: 'nodes' }, false],
      // The controller's Lease: that one by name; no other.
      [api, { namespace: APPS, verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: 'submission-service-controller' }, true],
      [api, { namespace: APPS, verb: 'create', group: 'coordination.k8s.io', resource: 'leases' }, true],
      [api, { namespace: APPS, verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: 'someone-else' }, false],

      [webhook, { namespace: APPS, verb: 'create', resource: 'pods' }, false],
      [webhook, { namespace: APPS, verb: 'get', resource: 'pods' }, true], // an executor's driver, by name
      [webhook, { namespace: APPS, verb: 'watch', resource: 'pods' }, false],
      [webhook, { namespace: APPS, verb: 'list', resource: 'pods' }, false],
      [webhook, { namespace: APPS, verb: 'list', ...ss('configtemplates') }, true],
      [webhook, { namespace: APPS, verb: 'create', ...ss('configtemplates') }, false],
      [webhook, { verb: 'patch', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', name: mwc }, true],
      [webhook, { verb: 'update', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', name: mwc }, false],
      [webhook, { verb: 'create', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations' }, false],
      [webhook, { verb: 'delete', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', name: mwc }, false],
      [webhook, { verb: 'patch', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations', name: 'someone-else' }, false],
      [webhook, { verb: 'list', group: 'admissionregistration.k8s.io', resource: 'mutatingwebhookconfigurations' }, false],
      [webhook, { verb: 'patch', group: 'admissionregistration.k8s.io', resource: 'validatingwebhookconfigurations', name: mwc }, false],
      [webhook, { namespace: RELEASE_NAMESPACE, verb: 'update', resource: 'secrets', name: 'submission-service-webhook-cert' }, true],
      [webhook, { namespace: RELEASE_NAMESPACE, verb: 'get', resource: 'secrets', name: 'submission-service-auth' }, false],
      [webhook, { namespace: RELEASE_NAMESPACE, verb: 'create', resource: 'secrets' }, false],
      [webhook, { namespace: RELEASE_NAMESPACE, verb: 'list', resource: 'secrets' }, false],

      [gateway, { namespace: APPS, verb: 'create', resource: 'pods' }, false],
      [gateway, { namespace: APPS, verb: 'list', ...ss('applications') }, false],

      [driver, { namespace: APPS, verb: 'create', resource: 'pods' }, true],
      [driver, { namespace: APPS, verb: 'deletecollection', resource: 'pods' }, true],
      [driver, { namespace: APPS, verb: 'create', resource: 'services' }, false], // Spark's driver makes none; reads: the bound-token test above
      [driver, { namespace: APPS, verb: 'deletecollection', resource: 'services' }, true],
      [driver, { namespace: APPS, verb: 'create', resource: 'configmaps' }, true],
      [driver, { namespace: APPS, verb: 'create', resource: 'persistentvolumeclaims' }, true],
      [driver, { namespace: 'default', verb: 'create', resource: 'pods' }, false],
      [driver, { namespace: RELEASE_NAMESPACE, verb: 'create', resource: 'pods' }, false],
      [driver, { namespace: APPS, verb: 'get', resource: 'secrets' }, false],
      [driver, { namespace: APPS, verb: 'create', ...ss('applications') }, false],
      [driver, { namespace: APPS, verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings' }, false],
    ];
    for (const [user, resourceAttributes, expected] of cases) {
      const namespace = user.split(':')[2];
      const review = await authz.createSubjectAccessReview({ body: {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
        spec: { user, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'], resourceAttributes },
      } });
      const what = [resourceAttributes.verb, [resourceAttributes.group, resourceAttributes.resource, resourceAttributes.subresource].filter(Boolean).join('/'),
        resourceAttributes.name ?? '', `in ${resourceAttributes.namespace ?? '(cluster)'}`].filter(Boolean).join(' ');
      t.equal(review.status?.allowed ?? false, expected, `${user.split(':').at(-1)} ${expected ? 'may' : 'may not'} ${what}`);
    }
  });

  t.test('the api ServiceAccount watches the keys Secret for real (SecretKeyStore, impersonated)', async (t) => {
    // The kubeconfig's admin, impersonating the ServiceAccount: the apiserver authorizes as it.
    const kc = new KubeConfig();
    kc.loadFromString(bed.kc.exportConfig());
    kc.users = kc.users.map((u) => ({ ...u, impersonateUser: `system:serviceaccount:${RELEASE_NAMESPACE}:submission-service-api` }));
    const core = kc.makeApiClient(CoreV1Api);
    const logs: string[] = [];
    const store = new SecretKeyStore({ kc, core, namespace: RELEASE_NAMESPACE, name: 'submission-service-auth', log: (m) => logs.push(m) });
    await store.start(); // list with fieldSelector metadata.name, then watch: both allowed
    t.teardown(() => store.stop());
    t.ok(store.resourceVersion, 'the chart\'s keys Secret is listed');
    t.same(logs, [], 'and usable');
    await t.rejects(core.listNamespacedSecret({ namespace: RELEASE_NAMESPACE }), { code: 403 }, 'listing every Secret is refused');
    await t.rejects(store.create('user'), { code: 403 }, 'and the api cannot write keys');
    // An operator (the admin credentials) issues a key; the watch as the ServiceAccount delivers it.
    const admin = new SecretKeyStore({ kc: bed.kc, core: bed.kc.makeApiClient(CoreV1Api), namespace: RELEASE_NAMESPACE, name: 'submission-service-auth' });
    const key = await admin.create('user', 'rbac-check');
    const deadline = Date.now() + 120_000; // a safety net: the loop ends when the watch delivers
    while (!store.verify(key.key) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.same(store.verify(key.key), { id: key.id, role: 'user' }, 'the watch (as the ServiceAccount) delivered the new key');
  });
}
