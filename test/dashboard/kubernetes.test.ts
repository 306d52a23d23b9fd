// Kubernetes mode, real apiserver and webhook (test bed): what the dashboard reads through
// the Cluster: the submission (overrides, admission mark and the sizing decision the webhook
// recorded, all from the driver pod; the API process has no node-pool rules), the Spark UI
// target (the driver pod's IP, port 4040, only while Running), and spark.ui.proxyBase on the
// admitted pod. The pod's status is written by hand: a TEST DOUBLE for the kubelet.
import t from 'tap';
import { startKubeBed } from '../helpers/kubernetes.js';
import { until } from '../helpers/poll.js';

t.test('submission and Spark UI target from the driver pod', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const overrides = { executor: { cores: 4 }, arguments: ['x'] };
  const res = await bed.call('POST', '/api/apps/', { jobName: 'ui', configOverrides: overrides });
  t.equal(res.status, 201);
  const appName = res.json.appName as string;
  const cluster = bed.api.cluster;

  const info = await cluster.submission(appName);
  t.same(info?.configOverrides, overrides, 'the overrides, from the pod annotation');
  t.equal(info?.admittedBy, 'submission-service-rules/v1', 'admitted by our webhook');
  t.equal(info?.sizing?.executor.pool, 'n1-standard-4', 'the webhook\'s decision: 4 cores on the 4-core pool');
  t.equal(info?.sizing?.driver.coreRequest, '710m', 'SPEC\'s default driver');
  t.match(info?.sizing?.driver.reasons.join(' '), /minus 140m left for the per-pod agents/, 'with its reasons');
  t.equal(await cluster.submission('nope-20260101-000000-aaaaa'), undefined, 'unknown app');
  const http = await bed.call('GET', `/api/apps/${appName}/submission`);
  t.equal(http.status, 200);
  t.same(http.json.configOverrides, overrides);
  t.same(http.json.sizing, info?.sizing, 'the endpoint answers it');
  const admitted = (await bed.pods(`submission-service/app-name=${appName}`))[0];
  t.ok(admitted.metadata!.annotations!['submission-service/sizing'].length < 2048, 'a compact annotation on the pod');

  const pod = await core.readNamespacedPod({ name: appName, namespace: bed.namespace });
  t.ok(pod.spec!.containers[0].args!.includes(`spark.ui.proxyBase=/dashboard/apps/${appName}/spark-ui`), 'admission set proxyBase on the driver');
  t.equal(await cluster.sparkUiTarget(appName), undefined, 'Pending: no UI');
  pod.status = { ...pod.status, phase: 'Running', podIP: '10.1.2.3', startTime: new Date() };
  await core.replaceNamespacedPodStatus({ name: appName, namespace: bed.namespace, body: pod });
  // Reads come from the informer cache: the new status arrives with the watch.
  await until(async () => (await cluster.sparkUiTarget(appName)) !== undefined, { what: 'the running pod in the cache' });
  t.equal((await cluster.sparkUiTarget(appName))?.href, 'http://10.1.2.3:4040/', 'Running: the pod IP, port 4040');
});

t.test('the server-side search over the informer cache', async (t) => {
  const bed = await startKubeBed(t);
  const submit = async (jobName: string, labels: Record<string, string>) => {
    const res = await bed.call('POST', '/api/apps/', { jobName, labels });
    t.equal(res.status, 201, res.body);
    return res.json.appName as string;
  };
  const a = await submit('nightly-etl', { team: 'Payments' });
  const b = await submit('nightly-etl', { team: 'growth' });
  const c = await submit('report', { team: 'payments-eu' });
  const names = (r: { json: { items: { appName: string }[] } }) => r.json.items.map((i) => i.appName);
  // The cache sees writes through its watch: wait until all three are listed.
  await until(async () => (await bed.call('GET', '/api/apps/?limit=10')).json.items.length === 3, { what: 'the cache to list all three' });
  t.same(names(await bed.call('GET', '/api/apps/?q=PAYMENTS')), [c, a], 'label values, ignoring case, newest first');
  t.same(names(await bed.call('GET', '/api/apps/?q=nightly&labelSelector=team=growth')), [b], 'with a label selector');
  t.same(names(await bed.call('GET', `/api/apps/?q=${b.slice(-5)}`)), [b], 'an application name');
  // a and b may share a creation second (the apiserver's resolution): the list then puts first the
  // one whose name sorts last (its tie-break). Paging must give exactly the one page's order.
  const whole = names(await bed.call('GET', '/api/apps/?q=e'));
  t.same([...whole].sort(), [a, b, c].sort(), 'all three found');
  const first = await bed.call('GET', '/api/apps/?q=e&limit=2');
  const second = await bed.call('GET', `/api/apps/?q=e&limit=2&cursor=${first.json.next}`);
  t.same([...names(first), ...names(second)], whole, 'paged by cursor');
  t.same((await bed.call('GET', '/api/apps/counts?q=payments')).json.byState.PENDING, 2, 'counts within the search');
});
