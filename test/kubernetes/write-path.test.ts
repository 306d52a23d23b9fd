// A submission is two writes (the Application, then its driver pod) and nothing more while
// it waits: the API works out what the webhook will admit (the same pure admission, the same
// rules), so the Application is created with its effective config and the submission's
// annotations, and the controller has nothing to copy. Where the webhook admits something
// else (its rules differ), the Application takes what was admitted; an API without the rules
// leaves the copy to the controller, as before.
import t from 'tap';
import { register as metrics } from 'prom-client';
import { buildRules } from '../../domain/index.js';
import { ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, ANNOTATION_SIZING, readConfig } from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { eventually, httpCall, startApi, startKubeBed } from '../helpers/kubernetes.js';

interface Stored { metadata: { name: string; generation?: number; resourceVersion?: string; annotations?: Record<string, string> }; spec: { config: Record<string, unknown> } }

/** The controller's config copies so far (its writes counter, kind="config", every outcome). */
async function configWrites(): Promise<number> {
  const text = await metrics.getSingleMetricAsString('submission_service_controller_writes_total');
  return [...text.matchAll(/kind="config"[^}]*\} (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

t.test('the write path on Kubernetes', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const stored = async (name: string) => (await bed.applications()).find((a) => a.metadata.name === name) as Stored | undefined;
  await eventually(async () => bed.api.cluster.leader?.isLeader, Boolean, { what: 'the API to lead (its controller runs)' });

  t.test('the Application is created with its config and annotations; the controller writes nothing for a waiting app', async (t) => {
    const copiesBefore = await configWrites();
    const res = await bed.call('POST', '/api/apps/', { jobName: 'two-writes', configOverrides: { executor: { cores: 4 } } });
    t.equal(res.status, 201);
    const { appName } = res.json;
    const pod = await core.readNamespacedPod({ name: appName, namespace: bed.namespace });
    const created = await stored(appName);
    t.same(created?.spec.config, readConfig(pod), 'the stored config is what the webhook admitted');
    t.same(created?.spec.config, res.json.config, 'and what the API answered');
    for (const key of [ANNOTATION_OVERRIDES, ANNOTATION_ADMITTED, ANNOTATION_SIZING]) {
      t.equal(created?.metadata.annotations?.[key], pod.metadata?.annotations?.[key], `${key} as on the admitted pod`);
    }
    // The controller has seen the Application and its pod (the API's cache has both) and is done.
    await bed.api.cluster.reconciler.drained();
    const after = await stored(appName);
    t.equal(after?.metadata.resourceVersion, created?.metadata.resourceVersion, 'no write after the create');
    t.equal(after?.metadata.generation, 1, 'the spec was never written again');
    t.equal(await configWrites(), copiesBefore, 'no config copy by the controller');
    // What the record keeps once the pod is gone is the stored copy.
    await core.deleteNamespacedPod({ name: appName, namespace: bed.namespace, gracePeriodSeconds: 0 });
    const gone = await eventually(() => bed.call('GET', `/api/apps/${appName}/submission`), (r) => r.json.driverPod === false, { what: 'the deleted pod to leave the cache' });
    t.same(gone.json.configOverrides, { executor: { cores: 4 } }, 'overrides from the Application');
    t.ok(gone.json.sizing?.executor?.pool, 'the sizing decision from the Application');
    t.same((await bed.call('GET', `/api/apps/${appName}`)).json.config, res.json.config, 'the config from the Application');
  });

  t.test('rules that differ from the webhook\'s: the Application takes what the webhook admitted', async (t) => {
    // This API reserves nothing for the per-pod agents; the webhook reserves 140m (README, "Sizing").
    const skewed = buildRules({ nodePools: exampleCluster().nodePools, namespace: bed.namespace, sizing: { defaultDriverCoreRequestReserveMillicores: 0 } });
    const api = await startApi(bed.testbed.kubeconfig, bed.namespace, { rules: skewed, controller: false });
    t.teardown(() => api.close());
    const res = await httpCall(api.baseUrl, 'POST', '/api/apps/', { jobName: 'skewed' });
    t.equal(res.status, 201);
    t.equal(res.json.config.driver.coreRequest, '710m', 'the answer is what the webhook admitted');
    // The controller, the config's one writer after creation, corrects the Application from the admitted pod.
    const app = await eventually(() => stored(res.json.appName), (a) => (a?.spec.config.driver as { coreRequest?: string })?.coreRequest === '710m', { what: 'the controller to correct the Application' });
    t.equal((app?.spec.config.driver as { coreRequest?: string })?.coreRequest, '710m', 'and so is the Application, once the controller corrected it');
  });

  t.test('an API without the rules: the controller copies the config, as before', async (t) => {
    const api = await startApi(bed.testbed.kubeconfig, bed.namespace, { controller: false });
    t.teardown(() => api.close());
    const res = await httpCall(api.baseUrl, 'POST', '/api/apps/', { jobName: 'no-rules' });
    t.equal(res.status, 201);
    const copied = await eventually(() => stored(res.json.appName), (a) => Object.keys(a?.spec.config ?? {}).length > 0, { what: 'the controller to copy the config' });
    t.same(copied?.spec.config, res.json.config);
    t.equal(copied?.metadata.annotations?.[ANNOTATION_OVERRIDES], '{}', "the submission's annotations copied too");
  });
});
