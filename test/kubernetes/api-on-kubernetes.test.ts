// Our API in Kubernetes mode against a real apiserver and our webhook: what each call
// leaves in the cluster (pods, Application and ConfigTemplate custom resources).
import t, { type Test } from 'tap';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { readConfig } from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { eventually, fakeKubelet, httpCall, type KubeBed, register, startApi, startKubeBed, WEBHOOK_NAME } from '../helpers/kubernetes.js';

const example = exampleCluster();

t.test('the API on Kubernetes', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const namespace = bed.namespace;
  const submit = (body: unknown, query = '') => bed.call('POST', `/api/apps/${query}`, body);
  const podNames = async () => (await bed.pods()).map((p) => p.metadata!.name!).sort();
  const recordNames = async () => (await bed.applications()).map((a) => a.metadata.name).sort();
  const podGone = async (name: string) => core.readNamespacedPod({ name, namespace }).then(() => false, (e) => e.code === 404);

  t.test('201 writes an admitted driver pod and an Application resource', async (t) => {
    const res = await submit({ jobName: 'first', configOverrides: { executor: { cores: 4 } } });
    t.equal(res.status, 201);
    const { appName } = res.json;
    t.match(appName, /^first-\d{8}-\d{6}-[a-z0-9]{5}$/);
    t.equal(res.json.state, 'PENDING');
    const pod = await core.readNamespacedPod({ name: appName, namespace });
    t.equal(pod.metadata?.labels?.['submission-service/job-name'], 'first');
    t.equal(pod.spec!.containers[0].resources?.requests?.cpu, '710m');
    t.same(readConfig(pod)?.executor, res.json.config.executor, 'the pod carries the config the API answered');
    t.same(res.json.config.executor, { ...res.json.config.executor, cores: 4, ...example.expected.executorByCores['4'] });
    const record = (await bed.applications()).find((a) => a.metadata.name === appName);
    t.ok(record, 'an Application resource');
    t.equal(record?.spec.jobName, 'first');
    t.same(pod.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Application', appName, (record?.metadata as { uid?: string }).uid]], 'the driver pod is owned by its Application');
    // The Application holds the config: written with it (the API has the webhook's rules), or copied by the controller.
    const copied = await eventually(async () => (await bed.applications()).find((a) => a.metadata.name === appName), (a) => Object.keys(a?.spec.config ?? {}).length > 0, { what: 'the Application to hold the config' });
    t.same(copied?.spec.config, res.json.config);
  });

  t.test('dryRun=true goes through the apiserver and the webhook and creates nothing', async (t) => {
    const pods = await podNames();
    const records = await recordNames();
    const res = await submit({ jobName: 'dry', configOverrides: { executor: { cores: 6 } } }, '?dryRun=true');
    t.equal(res.status, 200);
    t.equal(res.json.config.executor.coreRequest, example.expected.executorByCores['6'].coreRequest);
    t.equal(res.json.config.executor.memory, example.expected.executorByCores['6'].memory);
    t.equal(res.json.config.driver.coreRequest, example.expected.defaultDriver.coreRequest);
    t.equal(res.json.config.image, 'apache/spark:3.5.7', 'the webhook filled in the image');
    t.same(await podNames(), pods, 'no pod');
    t.same(await recordNames(), records, 'no Application');
    t.equal((await bed.call('GET', `/api/apps/${res.json.appName}`)).status, 404);
  });

  t.test('unschedulable: 422 with exactly the body of SPEC, dry run or not', async (t) => {
    const pods = await podNames();
    for (const query of ['', '?dryRun=true']) {
      const res = await submit({ jobName: 'toobig', configOverrides: { executor: { cores: example.expected.rejectedExecutorCores } } }, query);
      t.equal(res.status, 422, `status ${query}`);
      t.same(Object.keys(res.json).sort(), ['advice', 'executor', 'message']);
      t.match(res.json.advice, /modify/i);
      t.match(res.json.message, /unschedulable/i);
      t.same(Object.keys(res.json.executor).sort(), ['availableNodePools', 'targetInputConfig']);
      t.same(res.json.executor.availableNodePools, example.nodePools);
      t.equal(res.json.executor.targetInputConfig.cores, example.expected.rejectedExecutorCores);
    }
    t.same(await podNames(), pods, 'no pod');
  });

  t.test('a missing template answers 404', async (t) => {
    const res = await submit({ jobName: 'notpl', configTemplateName: 'nope' });
    t.equal(res.status, 404);
    t.match(res.json.message, /nope/);
  });

  t.test('list, get, stop, delete', async (t) => {
    const a = (await submit({ jobName: 'lifecycle' })).json.appName;
    const b = (await submit({ jobName: 'lifecycle' })).json.appName;
    const list = await bed.call('GET', '/api/apps/?jobName=lifecycle');
    t.equal(list.status, 200);
    t.same(list.json.items.map((x: { appName: string }) => x.appName).sort(), [a, b].sort());
    const one = await bed.call('GET', `/api/apps/${a}`);
    t.equal(one.status, 200);
    t.equal(one.json.state, 'PENDING');
    const stopped = await bed.call('POST', `/api/apps/${a}/stop`);
    t.match(stopped, { status: 200, json: { state: 'KILLED' } });
    t.ok(await podGone(a), 'the driver pod is deleted');
    t.match((await bed.applications()).find((x) => x.metadata.name === a), { spec: { stopRequested: true }, status: { state: 'KILLED', stateDetail: 'stopped by a user' } }, 'a request in the spec (the API), KILLED stored (the controller)');
    t.equal((await bed.call('GET', `/api/apps/${a}`)).json.state, 'KILLED', 'the record is kept');
    t.ok((await recordNames()).includes(a));
    t.equal((await bed.call('DELETE', `/api/apps/${b}`)).status, 204);
    t.notOk((await recordNames()).includes(b), 'the Application resource is gone');
    await eventually(() => podGone(b), Boolean, { what: 'the garbage collector to remove the driver pod of a deleted Application' });
    t.pass('the garbage collector removed its driver pod');
    t.equal((await bed.call('GET', `/api/apps/${b}`)).status, 404);
    t.equal((await bed.call('DELETE', `/api/apps/${b}`)).status, 404);
    t.equal((await bed.call('POST', `/api/apps/${b}/stop`)).status, 404);
  });

  t.test('a stop for the service\'s own reason: written once with the request, KILLED says why', (t) => stopForAReason(t, bed, podGone));

  t.test('the record survives the deletion of its pod by someone else', async (t) => {
    const appName = (await submit({ jobName: 'orphan' })).json.appName;
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    await eventually(() => podGone(appName), Boolean, { what: 'the pod to go' });
    const res = await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => r.json?.state === 'UNKNOWN', { what: 'UNKNOWN' });
    t.equal(res.status, 200);
    t.equal(res.json.state, 'UNKNOWN');
    // Seen going by the watch: "deleted before it started"; if a relist (after a watch error under load) missed it: "gone".
    t.match(res.json.stateDetail, /deleted before it started|the driver pod is gone/);
    t.equal(res.json.jobName, 'orphan');
  });

  t.test('with a fake kubelet: RUNNING, then COMPLETED, which outlives the pod', async (t) => {
    const appName = (await submit({ jobName: 'runs' })).json.appName;
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    // Reads come from the cache: a change made by someone else shows once the watch brings it.
    const running = await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => r.json?.state === 'RUNNING', { what: 'RUNNING' });
    t.equal(running.json.state, 'RUNNING');
    t.ok(running.json.startedAt, 'startedAt set');
    await fakeKubelet(bed.clients, namespace, appName, 'Succeeded');
    const done = await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => r.json?.state === 'COMPLETED', { what: 'COMPLETED' });
    t.equal(done.json.state, 'COMPLETED');
    t.ok(done.json.endedAt, 'endedAt set');
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    await eventually(() => podGone(appName), Boolean, { what: 'the pod to go' });
    // The cache has taken the deletion in (and the controller recorded the end) once the
    // submission no longer comes from the pod.
    await eventually(() => bed.call('GET', `/api/apps/${appName}/submission`), (r) => r.json?.driverPod === false, { what: 'the cache to see the deletion' });
    const after = await bed.call('GET', `/api/apps/${appName}`);
    t.equal(after.json.state, 'COMPLETED', 'still COMPLETED without its pod');
    t.equal(after.json.endedAt, done.json.endedAt);
    const listed = (await bed.call('GET', '/api/apps/?jobName=runs')).json.items;
    t.equal(listed[0].state, 'COMPLETED');
  });

  t.test('config templates through the API are ConfigTemplate resources', async (t) => {
    const config = { engineVersion: '3.5.7', executor: { cores: 2, instances: 2 } };
    t.equal((await bed.call('POST', '/api/config-templates/', { name: 'nightly', config })).status, 201);
    t.same((await bed.template('nightly'))?.spec.config, config);
    t.equal((await bed.call('POST', '/api/config-templates/', { name: 'nightly', config })).status, 409);
    t.same((await bed.call('GET', '/api/config-templates/nightly')).json, { name: 'nightly', config });
    const replaced = { executor: { cores: 4 } };
    t.equal((await bed.call('PUT', '/api/config-templates/nightly', { name: 'nightly', config: replaced })).status, 200);
    t.same((await bed.template('nightly'))?.spec.config, replaced);
    // The webhook sees it through its watch: a submission naming it is merged.
    await eventually(async () => bed.webhook.cache.templates.get('nightly')?.executor?.cores === 4, Boolean, { what: 'the webhook to see the change' });
    const merged = await submit({ jobName: 'withtpl', configTemplateName: 'nightly' }, '?dryRun=true');
    t.equal(merged.status, 200);
    t.equal(merged.json.config.executor.coreRequest, example.expected.executorByCores['4'].coreRequest);
    t.equal(merged.json.configTemplateName, 'nightly');
    t.equal((await bed.call('DELETE', '/api/config-templates/nightly')).status, 204);
    t.equal(await bed.template('nightly'), undefined, 'the resource is gone');
    t.equal((await bed.call('GET', '/api/config-templates/nightly')).status, 404);
  });

  t.test('webhook not registered: the API admits its own pods; without the rules it answers 503 naming the webhook, and leaves nothing behind', async (t) => {
    const admission = bed.clients.kc.makeApiClient(AdmissionregistrationV1Api);
    // An API without the webhook's node-pool file writes bare pods: only the webhook can admit them.
    const bare = await startApi(bed.testbed.kubeconfig, namespace, { controller: false });
    t.teardown(() => bare.close());
    await admission.deleteMutatingWebhookConfiguration({ name: WEBHOOK_NAME });
    t.teardown(() => register(bed.clients, bed.registration()));
    const submitBare = (query = '') => httpCall(bare.baseUrl, 'POST', `/api/apps/${query}`, { jobName: 'nohook' });
    // The apiserver drops the configuration from its admission chain a moment later.
    const res = await eventually(() => submitBare(), (r) => r.status !== 201 && r.status !== 200, { what: 'the webhook to be out of the chain' });
    t.equal(res.status, 503);
    t.match(res.json.message, /webhook/);
    const pods = await podNames();
    t.equal((await submitBare('?dryRun=true')).status, 503, 'dry runs too');
    t.same(await podNames(), pods, 'no pod left');
    // With the rules (as the chart runs it) the API admits its driver pods itself (expected-admission.ts).
    const own = await submit({ jobName: 'nohook', configOverrides: { executor: { cores: 4 } } });
    t.equal(own.status, 201, 'its own submissions do not depend on the webhook');
    const pod = await core.readNamespacedPod({ name: own.json.appName, namespace });
    t.equal(pod.spec!.containers[0].resources?.requests?.cpu, '710m', 'admitted and sized');
    t.same(readConfig(pod), own.json.config);
  });

  t.test('apiserver unreachable: 503 naming the API server; application reads are served from the cache', async (t) => {
    await bed.testbed.stop();
    const listed = await bed.call('GET', '/api/apps/', undefined, 10_000);
    t.equal(listed.status, 200, 'the list is answered from the cache, as last seen');
    t.ok(listed.json.items.length > 0);
    for (const [method, path, body] of [['POST', '/api/apps/', { jobName: 'down' }], ['GET', '/api/config-templates/']] as const) {
      const res = await bed.call(method, path, body, 10_000);
      t.equal(res.status, 503, `${method} ${path}`);
      t.match(res.json.message, /Kubernetes API server/, 'names the API server');
      t.comment(`answered in ${Math.round(res.ms)} ms`); // a hang fails the call itself (10 s client timeout)
    }
  });
});

/** A stop the service makes for a reason of its own (idle culling, orphan sweep), twice at once: one request, one reason, the record says it. */
async function stopForAReason(t: Test, bed: KubeBed, podGone: (name: string) => Promise<boolean>) {
  const appName = (await bed.call('POST', '/api/apps/', { jobName: 'culled' })).json.appName;
  // Two stops at once (two replicas' sweeps, or a sweep and a culling): one request, one reason.
  const whys = ['idle for more than 600 s', 'an orphaned Spark Connect session'];
  const records = await Promise.all(whys.map((why) => bed.api.cluster.stop(appName, why)));
  t.same(records.map((r) => r?.state), ['KILLED', 'KILLED']);
  const stored = (await bed.applications()).find((x) => x.metadata.name === appName);
  t.ok(whys.includes(stored?.spec.stopReason), `one reason in the spec: ${stored?.spec.stopReason}`);
  t.match(stored, { spec: { stopRequested: true }, status: { state: 'KILLED', stateDetail: stored?.spec.stopReason } }, 'the controller wrote it as stateDetail');
  t.equal((await bed.call('GET', `/api/apps/${appName}`)).json.stateDetail, stored?.spec.stopReason, 'the API\'s record says why');
  t.equal((await bed.call('POST', `/api/apps/${appName}/stop`)).status, 200, 'a later stop is no error');
  t.equal((await bed.applications()).find((x) => x.metadata.name === appName)?.spec.stopReason, stored?.spec.stopReason, 'and replaces nothing');
  t.ok(await podGone(appName), 'the driver pod is deleted');
}
