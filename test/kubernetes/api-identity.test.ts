// The API writes its driver pods admitted, with its own identity (here a service account, as
// in the chart), and the webhook configuration does not send those to the webhook
// (matchConditions on the username and the admission mark). Each pod is what the webhook
// would have admitted; anyone else's pods, with the mark or not, and every executor (the
// API's identity included) are still sent and sized; with the webhook gone, the API's
// submissions go on while every other pod fails closed.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { ANNOTATION_ADMITTED, LABEL_JOB, readConfig } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { eventually, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';

/** What admission decides about a pod, without what the apiserver adds per object. */
const admitted = (pod: V1Pod) => ({
  labels: pod.metadata?.labels, annotations: pod.metadata?.annotations, finalizers: pod.metadata?.finalizers, spec: pod.spec,
});

/** A pod as a client would write it again: no uid, resourceVersion, managedFields, status. */
const asWritten = (pod: V1Pod): V1Pod => {
  const { name, namespace, labels, annotations, ownerReferences, finalizers } = pod.metadata!;
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels, annotations, ownerReferences, finalizers }, spec: pod.spec };
};

t.test("the API's own identity skips the webhook, nobody else does", async (t) => {
  const bed = await startKubeBed(t, { apiIdentity: true });
  const { namespace } = bed;
  const { core } = bed.clients; // the admin's certificate, as the tests and the raw ceiling use
  const asApi = kubeClients(bed.apiIdentity!.kubeconfig);
  const reviewsOf = (appName: string) => bed.reviews.filter((r) => r.appName === appName).length;
  const gone = (name: string) => core.readNamespacedPod({ name, namespace }).then(() => false, (e: { code?: number }) => e.code === 404);
  const overrides = { executor: { cores: 4 }, driver: { env: { DAY: '2026-11-26' } } };

  t.test('a submission: no webhook call, and the pod is the one the webhook admits', async (t) => {
    const res = await bed.call('POST', '/api/apps/', { jobName: 'own', configOverrides: overrides });
    t.equal(res.status, 201);
    const { appName } = res.json;
    const pod = await core.readNamespacedPod({ name: appName, namespace });
    t.equal(reviewsOf(appName), 0, 'the webhook never saw it');
    t.ok(pod.metadata?.annotations?.[ANNOTATION_ADMITTED], 'it carries the admission mark');
    t.same(readConfig(pod), res.json.config, 'and the config the API answered');
    // The same bare pod through the webhook (the admin's dry run), once the name is free again.
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    await eventually(() => gone(appName), Boolean, { what: 'the pod to go' });
    const bare = bareDriverPod({ appName, jobName: 'own', namespace, configOverrides: overrides });
    bare.metadata!.ownerReferences = pod.metadata!.ownerReferences;
    const byWebhook = await core.createNamespacedPod({ namespace, body: bare, dryRun: 'All' });
    t.equal(reviewsOf(appName), 1, 'the admin\'s bare pod went to the webhook');
    t.same(admitted(pod), admitted(byWebhook), 'the API wrote what the webhook admits');
    // And the webhook, given the API's pod itself, changes nothing in it.
    const again = await core.createNamespacedPod({ namespace, body: asWritten(pod), dryRun: 'All' });
    t.equal(reviewsOf(appName), 2, "the admin's copy of it, mark and all, went to the webhook");
    t.same(admitted(again), admitted(pod), 'admitted again: the same pod');
  });

  t.test("the mark on anyone else's pod does not skip the webhook: it is sized", async (t) => {
    const pod: V1Pod = {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'team-marked', namespace, labels: { [LABEL_JOB]: 'team' }, annotations: { [ANNOTATION_ADMITTED]: 'submission-service-rules/v1' } },
      spec: { restartPolicy: 'Never', containers: [{ name: 'spark-kubernetes-driver', image: 'example/anything', resources: { requests: { cpu: '64', memory: '1Ti' } } }] },
    };
    const created = await core.createNamespacedPod({ namespace, body: pod });
    t.equal(reviewsOf('team-marked'), 1, 'sent to the webhook');
    t.equal(created.spec!.containers[0].resources?.requests?.cpu, '710m', 'sized by admission, not as written');
    t.not(created.spec!.containers[0].image, 'example/anything', 'its image from the config');
    // The API's identity without the mark (a pod it has not admitted) is sent too.
    const unmarked = bareDriverPod({ appName: 'api-unmarked', jobName: 'team', namespace });
    const byApi = await asApi.core.createNamespacedPod({ namespace, body: unmarked, dryRun: 'All' });
    t.equal(reviewsOf('api-unmarked'), 1, "the API's identity, no mark: sent");
    t.ok(byApi.metadata?.annotations?.[ANNOTATION_ADMITTED], 'and admitted');
  });

  t.test('executors are sized, whoever writes them', async (t) => {
    const res = await bed.call('POST', '/api/apps/', { jobName: 'execs', configOverrides: overrides });
    t.equal(res.status, 201);
    const driver = await core.readNamespacedPod({ name: res.json.appName, namespace });
    const config = readConfig(driver)!;
    const byAdmin = await core.createNamespacedPod({ namespace, body: sparkExecutorPod(driver, 1, namespace) });
    t.not(byAdmin.spec!.containers[0].resources?.requests?.memory, '1408Mi', 'resized from what Spark asked');
    t.equal(byAdmin.metadata?.annotations?.[ANNOTATION_ADMITTED] !== undefined, true, 'admitted');
    // Even with the API's identity and the mark, an executor goes to the webhook.
    const marked = sparkExecutorPod(driver, 2, namespace);
    marked.metadata!.annotations = { [ANNOTATION_ADMITTED]: 'submission-service-rules/v1' };
    const byApi = await asApi.core.createNamespacedPod({ namespace, body: marked });
    t.equal(bed.reviews.filter((r) => r.appName === res.json.appName && r.outcome === 'admitted').length, 2, 'both executors reviewed');
    t.same(byApi.spec!.containers[0].resources, byAdmin.spec!.containers[0].resources, 'and sized alike');
    t.ok(config.executor?.coreRequest, 'from the application\'s executor config');
  });

  t.test("the webhook gone: the API's submissions go on, every other pod is refused (failurePolicy Fail)", async (t) => {
    await bed.webhook.close();
    const res = await bed.call('POST', '/api/apps/', { jobName: 'nohook', configOverrides: overrides });
    t.equal(res.status, 201, 'the API admits its own pods');
    t.equal((await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'nohook' })).status, 200, 'dry runs too');
    const driver = await core.readNamespacedPod({ name: res.json.appName, namespace });
    const refused = async (write: () => Promise<unknown>) => write().then(() => undefined, (e: { code?: number; body?: unknown }) => ({ code: e.code, body: String(e.body) }));
    const team = await refused(() => core.createNamespacedPod({ namespace, body: bareDriverPod({ appName: 'team-nohook', jobName: 'team', namespace }) }));
    t.equal(team?.code, 500, "a team's pod is refused");
    t.match(team?.body, /failed calling webhook/);
    const executor = await refused(() => core.createNamespacedPod({ namespace, body: sparkExecutorPod(driver, 1, namespace) }));
    t.equal(executor?.code, 500, 'an executor is refused');
    const marked = bareDriverPod({ appName: 'marked-nohook', jobName: 'team', namespace });
    marked.metadata!.annotations![ANNOTATION_ADMITTED] = 'submission-service-rules/v1';
    t.equal((await refused(() => core.createNamespacedPod({ namespace, body: marked })))?.code, 500, "the mark on the admin's pod changes nothing");
  });
});
