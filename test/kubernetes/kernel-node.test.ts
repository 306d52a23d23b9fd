// Runs alone (scripts/test.sh): the real node is one per machine, and the chart's pods, a
// kernel's driver and its executors load both cores at once.
//
// A notebook kernel from the kernel image, through the installed chart (issue 16): the chart's
// notebook-service submits the kernel through the chart's API; the webhook renders its driver
// pod from the kernel image; in it our launcher dials back to the notebook-service through the
// cluster network (its Service name, cluster DNS); a stock `jupyter server` on this host, its
// gateway URL at the notebook-service's ClusterIP, runs a Spark cell whose tasks run on executor
// pods the kernel's driver created and the webhook sized. Interrupt cancels the running job and
// the kernel still answers; deleting the kernel removes its driver and executor pods.
import t from 'tap';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_ADMITTED, LABEL_APP, SPARK_ROLE } from '../../domain/index.js';
import { APPS, AUTH_SECRET, chartNodeUnavailable, installChart, KERNEL_IMAGE, NS, send } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { http } from '../helpers/service.js';
import { KernelClient, startJupyter, toolsEnv } from '../gateway/jupyter.js';
import { interruptStopsSparkJob } from '../gateway/kernel-lifecycle.js';

const skip = chartNodeUnavailable() || (toolsEnv() ? false : 'needs the tools virtualenv (jupyter_server)');

// A cold image build alone takes tens of minutes on two busy cores.
t.setTimeout(120 * 60_000);

t.test('a notebook kernel from the kernel image, started by the installed chart', { skip }, async (t) => {
  const started = Date.now();
  const { bed, kubectl, keys, admin, base } = await installChart(t, { nodePool: true });
  const { core, kc } = bed;

  // The notebook service's own key, as a platform engineer makes it (README, "Notebooks on
  // Kubernetes"): the Jupyter server is given it as its auth_token; the notebook service reads
  // `gateway.key` when its pod starts. The admin's key is for the kernel template.
  const gatewayKey = (await keys.create('user', 'notebook-service')).key;
  await kubectl(['-n', NS, 'patch', 'secret', AUTH_SECRET, '--type', 'merge', '-p', JSON.stringify({ stringData: { 'gateway.key': gatewayKey } })]);
  await kubectl(['-n', NS, 'rollout', 'restart', 'deployment/submission-service-gateway']);
  await kubectl(['-n', NS, 'rollout', 'status', 'deployment/submission-service-gateway', '--timeout=10m']);

  // The Services' ClusterIPs, reached from this host through kube-proxy's rules.
  const notebookService = await core.readNamespacedService({ name: 'notebook-service', namespace: NS });
  const notebooksBase = new URL(`http://${notebookService.spec!.clusterIP!}:80`);
  const notebooks = `${notebooksBase.origin}/notebooks`;
  const api = (method: string, path: string, body?: unknown, key = admin.key) => http(base.origin, method, path, body, { 'x-api-key': key }).catch((error: Error) => ({ status: 0, json: undefined, text: error.message }));

  // A kernel template: one executor to start with, two at most (the node has two cores).
  const template = { name: 'notebook', config: { pythonVersion: '3', engineVersion: '3.5.7', executor: { cores: 1, instances: 1 }, engineConf: { 'spark.dynamicAllocation.maxExecutors': '2' } } };
  // The replicas watch the auth Secret: the new keys count within the watch's latency.
  const created = await eventually(() => api('POST', '/api/config-templates/', template), (r) => r.status !== 401 && r.status !== 0, { what: 'the admin key to be accepted', timeoutMs: 120_000, intervalMs: 500 });
  t.equal(created.status, 201, created.text);
  // The restarted notebook service answers with its own key, and lists the template as a kernel.
  // Each probe on a connection of its own (agent false), as installChart's: while kube-proxy
  // has no rule yet for the restarted Service's endpoints, its ClusterIP goes out by the
  // default route (this machine's egress answers 404), and a kept-alive socket would stay there.
  const specs = await eventually(() => send(false, notebooksBase, 'GET', '/notebooks/api/kernelspecs', gatewayKey),
    (r) => r.status === 200, { what: 'the notebook service to accept its own key', timeoutMs: 300_000, intervalMs: 500 });
  t.ok(specs.json.kernelspecs.notebook, 'the template is a kernel spec of the installed notebook service');

  const jupyter = await startJupyter(t, bed.dir, notebooks, gatewayKey);
  const jp = (method: string, path: string, body?: unknown) => http(jupyter.url, method, `${path}${path.includes('?') ? '&' : '?'}token=${jupyter.token}`, body);
  const kernel = await jp('POST', '/api/kernels', { name: 'notebook' });
  t.equal(kernel.status, 201, kernel.text);
  const id = kernel.json.id as string;
  const listed = await api('GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`, undefined, gatewayKey);
  t.equal(listed.json.items.length, 1, 'the kernel is an application of the installed API');
  const appName = listed.json.items[0].appName as string;

  // Every pod of the kernel's application, as the apiserver saw it (executors may be given back
  // by dynamic allocation before a list would see them).
  const seen = new Map<string, V1Pod>();
  const watch = await new Watch(kc).watch(`/api/v1/namespaces/${APPS}/pods`, { labelSelector: `${LABEL_APP}=${appName}` },
    (_type, pod: V1Pod) => { if (!seen.has(pod.metadata!.name!) || pod.spec?.nodeName) seen.set(pod.metadata!.name!, pod); }, () => undefined);
  t.teardown(() => watch.abort());

  const client = await new KernelClient(`${jupyter.url.replace('http', 'ws')}/api/kernels/${id}/channels?token=${jupyter.token}`).open(t);
  // The driver starts in its pod, the launcher dials the notebook service, Spark asks for executors.
  const sum = await client.execute('sc.parallelize(range(1000), 8).sum()', 900_000);
  t.equal(sum.result, '499500', sum.stderr || JSON.stringify(sum.error) || jupyter.output().slice(-2000));

  const driver = await core.readNamespacedPod({ name: appName, namespace: APPS });
  t.equal(driver.spec!.containers[0].image, KERNEL_IMAGE, 'the driver runs the kernel image');
  t.equal(driver.metadata?.annotations?.[ANNOTATION_ADMITTED] !== undefined, true, 'admitted with the chart\'s rules');
  const executors = [...seen.values()].filter((p) => p.metadata?.labels?.[SPARK_ROLE] === 'executor');
  t.ok(executors.length >= 1, `executor pods of the kernel's application: ${executors.map((p) => p.metadata!.name).join(', ')}`);
  for (const executor of executors) {
    t.ok(executor.metadata?.annotations?.[ANNOTATION_ADMITTED], `${executor.metadata!.name}: admitted by the chart's webhook`);
    t.ok(executor.spec?.containers[0].resources?.requests?.cpu, `${executor.metadata!.name}: sized`);
    t.same(executor.metadata?.ownerReferences?.map((o) => [o.kind, o.name]), [['Pod', appName]], 'created by the kernel\'s driver');
  }
  // The tasks ran in those pods: a pod's hostname is its name.
  const hosts = await client.execute('print(" ".join(sorted(set(sc.parallelize(range(8), 8).map(lambda _: __import__("socket").gethostname()).collect()))))', 300_000);
  const names = new Set([...seen.values()].filter((p) => p.metadata?.labels?.[SPARK_ROLE] === 'executor').map((p) => p.metadata!.name!));
  t.ok(hosts.stdout.trim() && hosts.stdout.trim().split(' ').every((host) => names.has(host)), `tasks ran on executor pods: ${hosts.stdout.trim()} ${hosts.stderr}`);

  // Interrupt: the cell ends with KeyboardInterrupt, the job is cancelled, the kernel answers.
  await interruptStopsSparkJob(t, client, jp, id);
  t.equal((await client.execute('1+1', 120_000)).result, '2', 'the kernel still answers after the interrupt');

  // Deleting the kernel removes its application, the driver pod and its executors.
  const deleted = await jp('DELETE', `/api/kernels/${id}`);
  t.equal(deleted.status, 204, deleted.text);
  const left = await eventually(() => core.listNamespacedPod({ namespace: APPS, labelSelector: `${LABEL_APP}=${appName}` }),
    (list) => list.items.length === 0, {
      what: 'the kernel\'s driver and executor pods to be gone', timeoutMs: 300_000, intervalMs: 1_000,
      // The hog run once left an executor Terminating (grace 0) for good: say what held it.
      describe: (list) => JSON.stringify(list?.items.map((pod) => ({
        name: pod.metadata?.name, deletion: pod.metadata?.deletionTimestamp, finalizers: pod.metadata?.finalizers, phase: pod.status?.phase,
        containers: pod.status?.containerStatuses?.map((c) => ({ name: c.name, state: c.state })),
      }))),
    });
  t.same(left.items, [], 'no pod of the kernel is left');
  t.equal((await api('GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`, undefined, gatewayKey)).json.items.length, 0, 'its application is gone from the API');
  process.stderr.write(`kernel-node: whole test ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});
