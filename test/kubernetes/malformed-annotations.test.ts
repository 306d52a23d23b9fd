// A driver pod whose config annotation is edited into something unreadable after admission
// (annotations of a pod can be changed; admission only sees the create): on the real
// apiserver, nothing crashes, it is reported, and everything keeps serving.
// - the API and the controller (in this process) see the update through their informers: no
//   unhandled rejection (which ends a Node process); the webhook (in this process) reads the
//   driver on its first executor and refuses that executor with 503 rather than size it from nothing;
// - the application's stateDetail says so, in the API and in the status the controller writes;
// - it is counted (submission_service_malformed_annotations_total);
// - a new API replica and a new controller start with that pod in their first list (and a new
//   webhook cache, which lists templates only) (before: a failed start, so a crash loop, and with failurePolicy Fail no pod
//   could be created in the namespace);
// - admission goes on: a new submission is admitted.
import t from 'tap';
import { register } from 'prom-client';
import { AdmissionCache } from '../../cluster/kubernetes/admission-cache.js';
import { ANNOTATION_CONFIG, ANNOTATION_OVERRIDES } from '../../domain/index.js';
import { eventually, sparkExecutorPod, startApi, startKubeBed } from '../helpers/kubernetes.js';

async function counter(name: string, labels: string): Promise<number> {
  if (!register.getSingleMetric(name)) return 0;
  const text = await register.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

t.test('a malformed config annotation is reported, never fatal', async (t) => {
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => { rejections.push(reason); };
  process.on('unhandledRejection', onRejection);
  t.teardown(() => { process.off('unhandledRejection', onRejection); });

  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const submitted = await bed.call('POST', '/api/apps/', { jobName: 'edited' });
  t.equal(submitted.status, 201);
  const appName: string = submitted.json.appName;
  const apiBefore = await counter('submission_service_malformed_annotations_total', 'component="api"');
  const webhookBefore = await counter('submission_service_malformed_annotations_total', 'component="webhook"');

  // What `kubectl annotate --overwrite pod X submission-service/config='{"executor":'` does.
  const broken = '{"executor":';
  await core.patchNamespacedPod({ name: appName, namespace: bed.namespace, body: [{ op: 'add', path: `/metadata/annotations/${ANNOTATION_CONFIG.replace('/', '~1')}`, value: broken }] });
  // And the copy the controller keeps on the Application of what was submitted, too.
  await bed.clients.custom.patchNamespacedCustomObject({
    group: 'submission-service.io', version: 'v1', namespace: bed.namespace, plural: 'applications', name: appName,
    body: [{ op: 'add', path: `/metadata/annotations/${ANNOTATION_OVERRIDES.replace('/', '~1')}`, value: '[not json' }],
  }).catch(() => undefined); // absent annotations map (not copied yet): the pod alone is enough

  // A webhook (re)started now has that pod in its first list (before: its start failed, so a crash loop).
  const cache = new AdmissionCache(bed.clients, bed.namespace, () => undefined);
  t.teardown(() => cache.stop());
  await t.resolves(cache.start(), 'a new webhook cache starts with it in its first list');
  t.ok(cache.ready, 'and is ready');

  const shown = await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => /config cannot be read/.test(r.json?.stateDetail ?? ''), { what: 'the API to report it' });
  t.equal(shown.status, 200, 'the API answers');
  t.match(shown.json.stateDetail, /the driver pod's config cannot be read: the \S+ annotation is not JSON/);
  const status = await eventually(async () => (await bed.applications()).find((a) => a.metadata.name === appName)?.status,
    (s) => /config cannot be read/.test(s?.stateDetail ?? ''), { what: 'the controller to write it into the status' });
  t.match(status?.stateDetail, /config cannot be read/, "in the Application's status");
  t.equal((await bed.call('GET', `/api/apps/${appName}/submission`)).status, 200, 'what it was submitted with still answers');
  await eventually(() => counter('submission_service_malformed_annotations_total', 'component="api"'), (n) => n > apiBefore, { what: 'the API to count it' });
  // An executor of that driver: the webhook reads the driver (it does not watch drivers) and
  // refuses to size the executor from an unreadable config.
  const driver = await core.readNamespacedPod({ name: appName, namespace: bed.namespace });
  const executor = await core.createNamespacedPod({ namespace: bed.namespace, body: sparkExecutorPod(driver, 1, bed.namespace) })
    .then(() => undefined, (e: { code?: number; body?: unknown }) => e);
  t.equal(executor?.code, 503, 'its executor is refused with 503');
  t.match(String(executor?.body), /annotation is not JSON/, 'saying why');
  t.ok(await counter('submission_service_malformed_annotations_total', 'component="webhook"') > webhookBefore, 'the webhook counts it');
  t.pass('counted by the API and by the webhook');

  // A new API replica (and controller candidate) started now, with it in its first list.
  const replica = await startApi(bed.testbed.kubeconfig, bed.namespace);
  t.teardown(() => replica.close());
  const read = await replica.app.inject({ method: 'GET', url: `/api/apps/${appName}` });
  t.equal(read.statusCode, 200, 'a new API replica starts and answers');
  t.match(read.json().stateDetail, /config cannot be read/);

  const next = await bed.call('POST', '/api/apps/', { jobName: 'after' });
  t.equal(next.status, 201, 'admission goes on');
  t.same(rejections, [], 'no unhandled rejection in this process (the API, the controller and the webhook run in it)');
});
