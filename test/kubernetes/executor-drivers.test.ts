// The webhook sizes an executor from its driver's effective config, which it reads on the real
// apiserver with one GET when an executor first needs it; it does not list or watch pods.
// - it runs with the chart's Role (pods: get only; templates: get, list, watch): ready, and
//   sizing executors (a list or watch of pods would be refused with 403 and fail its start);
// - N executors of a driver it never read, reviewed at once, share one GET (the lookup metric);
// - a driver deleted and re-created under the same name: the new one's executors get the new
//   config (the cache is keyed by the driver pod's uid, which the executor's owner reference names);
// - forged executors get a driver's sizing only for a driver of ours, in this namespace, under
//   the uid they name: not another namespace's look-alike, not a deleted driver, not a uid that
//   is not the pod's under that name.
import t from 'tap';
import { join } from 'node:path';
import { RbacAuthorizationV1Api, type V1MutatingWebhookConfiguration, type V1Pod } from '@kubernetes/client-node';
import { register } from 'prom-client';
import { startWebhookService } from '../../cli/webhook-service.js';
import { apiStatus } from '../../cluster/kubernetes/errors.js';
import {
  ANNOTATION_ADMITTED, ANNOTATION_CONFIG, bareDriverPod, LABEL_APP, LABEL_JOB, readConfig, SPARK_ROLE,
} from '../../domain/index.js';
import { mutatingWebhookConfiguration } from '../../webhook/server/registration.js';
import { clientsAs, eventually, freePort, register as registerWebhook, sparkExecutorPod, startKubeBed, WEBHOOK_NAME } from '../helpers/kubernetes.js';

/** submission_service_admission_cache_lookups_total{cache="drivers",result} now. */
async function driverLookups(result: 'hit' | 'miss' | 'shared'): Promise<number> {
  const text = await register.getSingleMetricAsString('submission_service_admission_cache_lookups_total');
  const line = text.split('\n').find((l) => l.includes('cache="drivers"') && l.includes(`result="${result}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

const reviewOf = (pod: V1Pod, uid: string) => ({
  apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
  request: { uid, kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: pod.metadata!.namespace, object: pod },
});

const cpu = (pod: V1Pod) => pod.spec!.containers[0].resources?.requests?.cpu;

t.test("executors' drivers, read on a miss", async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const namespace = bed.namespace;

  // The chart's Role for the webhook (manifests/chart/templates/rbac.yaml; test/manifests/chart.test.ts).
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'webhook' } } });
  const rbac = bed.clients.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: 'webhook' }, rules: [
    { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
    { apiGroups: ['submission-service.io'], resources: ['configtemplates'], verbs: ['get', 'list', 'watch'] },
  ] } });
  await rbac.createNamespacedRoleBinding({ namespace, body: {
    metadata: { name: 'webhook' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'webhook' },
    subjects: [{ kind: 'ServiceAccount', name: 'webhook', namespace }],
  } });
  const clients = await clientsAs(bed.clients, namespace, 'webhook');

  const port = await freePort();
  let reviews = 0;
  const webhook = await startWebhookService({
    clients, rules: bed.rules, certDir: join(bed.dir, 'role-certs'), port, host: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
    onReview: () => { reviews++; },
  });
  t.teardown(() => webhook.close());
  t.ok(webhook.cache.ready, 'started and ready with pods: get only (no list, no watch of pods)');
  // In place of the bed's webhook; a dry-run driver that reaches it says the apiserver calls it now.
  await registerWebhook(bed.clients, mutatingWebhookConfiguration({
    name: WEBHOOK_NAME, url: `https://127.0.0.1:${port}/mutate-pods`, caBundle: webhook.caBundle, namespaces: [namespace],
  }) as V1MutatingWebhookConfiguration);
  await eventually(async () => {
    const before = reviews;
    await core.createNamespacedPod({ namespace, dryRun: 'All', body: bareDriverPod({ appName: 'probe-20260101-000000-aaaaa', jobName: 'probe', namespace }) });
    return reviews > before;
  }, Boolean, { what: 'the apiserver to call the webhook with the chart\'s Role' });

  const driverOf = async (appName: string, cores: number) =>
    core.createNamespacedPod({ namespace, body: bareDriverPod({ appName, jobName: appName.split('-')[0], namespace, configOverrides: { executor: { cores } } }) });
  const deleted = async (name: string) => {
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    await eventually(() => core.readNamespacedPod({ name, namespace }).then(() => false, (e: { code?: number }) => e.code === 404), Boolean, { what: `${name} to be gone` });
  };

  t.test('N executors of a driver never read, reviewed at once, share one GET; then it is a hit', async (t) => {
    const submitted = await bed.call('POST', '/api/apps/', { jobName: 'many', configOverrides: { executor: { cores: 4 } } });
    t.equal(submitted.status, 201);
    const driver = await core.readNamespacedPod({ name: submitted.json.appName, namespace });
    const N = 8;
    const [miss, shared, hit] = [await driverLookups('miss'), await driverLookups('shared'), await driverLookups('hit')];
    await Promise.all(Array.from({ length: N }, (_, i) => webhook.cache.prepare(reviewOf(sparkExecutorPod(driver, i + 1, namespace), `many-${i}`))));
    t.equal(await driverLookups('miss') - miss, 1, 'one GET');
    t.equal(await driverLookups('shared') - shared, N - 1, `the other ${N - 1} waited for it`);
    t.same([webhook.cache.driverConfig(driver.metadata!.name!, driver.metadata!.uid), webhook.cache.driverApplication(driver.metadata!.name!, driver.metadata!.uid)], [readConfig(driver), submitted.json.appName], 'the driver\'s effective config and its application (its app label), by its uid');
    const executor = await core.createNamespacedPod({ namespace, body: sparkExecutorPod(driver, N + 1, namespace) });
    t.equal(cpu(executor), '3400m', 'an executor through the apiserver: sized for 4 cores');
    t.equal(await driverLookups('hit') - hit, 1, 'from the cache');
  });

  t.test('a driver re-created under the same name: its executors get the new config', async (t) => {
    const name = 'again-20260101-000000-aaaaa';
    const first = await driverOf(name, 4);
    t.equal(cpu(await core.createNamespacedPod({ namespace, body: sparkExecutorPod(first, 1, namespace) })), '3400m', 'the first driver\'s executor: 4 cores');
    await deleted(name);
    const second = await driverOf(name, 2);
    t.not(second.metadata!.uid, first.metadata!.uid, 'another pod under the same name');
    t.equal(cpu(await core.createNamespacedPod({ namespace, body: sparkExecutorPod(second, 2, namespace) })), '1700m', 'the new driver\'s executor: 2 cores, not the old 4');
    // A late executor of the first driver (its owner reference names the first uid) is still the first application's.
    const late = sparkExecutorPod(first, 3, namespace);
    t.equal(cpu(await core.createNamespacedPod({ namespace, body: late })), '3400m', 'a late executor of the first driver: its own 4 cores');
  });

  t.test('forged executors: only a driver of ours, in this namespace, under the uid they name', async (t) => {
    const name = 'twin-20260101-000000-aaaaa';
    // A look-alike in another namespace (no webhook there): our labels and a config annotation.
    await core.createNamespace({ body: { metadata: { name: 'team-b' } } });
    const twin = await core.createNamespacedPod({ namespace: 'team-b', body: {
      metadata: { name, labels: { [LABEL_JOB]: 'twin', [LABEL_APP]: name, [SPARK_ROLE]: 'driver' }, annotations: { [ANNOTATION_CONFIG]: JSON.stringify({ executor: { cores: 4, coreRequest: '3400m', memory: '1g' } }) } },
      spec: { containers: [{ name: 'spark-kubernetes-driver', image: 'apache/spark:3.5.7' }] },
    } });
    const untouched = async (body: V1Pod, what: string) => {
      const pod = await core.createNamespacedPod({ namespace, body });
      t.equal(cpu(pod), '1', `${what}: not sized (as Spark wrote it)`);
      t.notOk(pod.metadata?.annotations?.[ANNOTATION_ADMITTED], `${what}: not admitted as ours`);
    };
    await untouched(sparkExecutorPod(twin, 1, namespace), "naming another namespace's driver");
    // A driver of ours under the same name here: the twin's uid is still not its.
    const ours = await driverOf(name, 4);
    await untouched(sparkExecutorPod(twin, 2, namespace), 'naming the twin\'s uid under our driver\'s name');
    t.equal(cpu(await core.createNamespacedPod({ namespace, body: sparkExecutorPod(ours, 3, namespace) })), '3400m', 'our driver\'s own executor is sized');
    // A driver of ours deleted before any executor: never read, gone now.
    const gone = await driverOf('gone-20260101-000000-aaaaa', 4);
    await deleted('gone-20260101-000000-aaaaa');
    await untouched(sparkExecutorPod(gone, 1, namespace), 'naming a deleted driver');
    const byLabel = sparkExecutorPod(gone, 2, namespace);
    delete byLabel.metadata!.ownerReferences;
    await untouched(byLabel, 'naming a deleted driver by label only');
    // And the guard holds for them: a hostPath is refused whatever driver an executor names.
    const hostPath = sparkExecutorPod(twin, 4, namespace);
    hostPath.spec!.volumes = [{ name: 'root', hostPath: { path: '/' } }];
    const refused = await core.createNamespacedPod({ namespace, body: hostPath }).then(() => undefined, (e: unknown) => e);
    t.equal(apiStatus(refused).code, 403, 'a hostPath is refused');
    t.match(apiStatus(refused).status?.message, /hostPath/);
  });
});
