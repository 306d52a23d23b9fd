// The log-archive finalizer's uninstall path, on a real kube-apiserver (test/cluster): pods
// deleted after `helm uninstall` would hold the finalizer for ever (no controller is left), so
// the chart's pre-delete hook takes it off. Here the hook's Job is rendered by Helm and its
// command run as that Job's pod would run it: with the token of its service account, bound by
// the chart's own RBAC (so a missing permission fails here too). Checked: pods deleted before
// the hook stop being Terminating, pods deleted after it go at once, another controller's
// finalizer stays. (The test bed has no kubelet: the Job is not run by a node here; the chart
// test on a real node, test/kubernetes/chart-install.test.ts, runs it through `helm uninstall`.)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CoreV1Api, KubernetesObjectApi, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { LABEL_APP, LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { releaseFinalizersCommand } from '../../cli/release-finalizers.js';
import { eventually } from '../helpers/kubernetes.js';
import { named, RELEASE_NAMESPACE, renderChart } from './helm.js';
import { startTestbed, type Testbed, testbedUnavailable } from './testbed.js';

const APPS = 'spark-apps';
const OTHER_FINALIZER = 'example.com/keep-for-audit';

const skip = testbedUnavailable();
if (skip) {
  t.plan(0, skip);
} else {
  let bed: Testbed;
  const dir = mkdtempSync(join(tmpdir(), 'ss-uninstall-'));
  t.before(async () => { bed = await startTestbed(); });
  t.teardown(async () => { await bed?.stop(); rmSync(dir, { recursive: true, force: true }); });

  const pod = (name: string, finalizers: string[]): V1Pod => ({
    metadata: { name, finalizers, labels: { [LABEL_APP]: 'pi-1', 'spark-role': name.includes('exec') ? 'executor' : 'driver' } },
    spec: { automountServiceAccountToken: false, containers: [{ name: 'c', image: 'busybox' }] },
  });

  t.test('after uninstall no pod stays Terminating: the pre-delete hook takes our finalizer off', async (t) => {
    const core = bed.kc.makeApiClient(CoreV1Api);
    const objects = KubernetesObjectApi.makeApiClient(bed.kc);
    const rendered = renderChart({ 'uninstallHook.enabled': 'true' });
    const job = named<V1Job>(rendered, 'Job', 'submission-service-release-finalizers');
    t.ok(job, 'the chart has the hook Job');
    t.equal(job!.metadata?.annotations?.['helm.sh/hook'], 'pre-delete', 'run before anything of the release is deleted');
    const spec = job!.spec!.template.spec!;
    const [container] = spec.containers;
    t.same(container!.command, ['submission-service', 'release-finalizers']);
    t.same(container!.args, ['--namespace', APPS]);

    // What the hook's pod has: its service account, with the chart's Role in the applications namespace.
    await objects.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NAMESPACE } });
    for (const [kind, name] of [['Namespace', APPS], ['ServiceAccount', spec.serviceAccountName!], ['Role', spec.serviceAccountName!], ['RoleBinding', spec.serviceAccountName!]] as const) {
      const object = rendered.find((o) => o.kind === kind && o.metadata?.name === name);
      t.ok(object, `the chart's ${kind} ${name}`);
      await objects.create(object!);
    }
    await core.createNamespacedServiceAccount({ namespace: APPS, body: { metadata: { name: 'default' } } }).catch(() => undefined);
    const token = await core.createNamespacedServiceAccountToken({ name: spec.serviceAccountName!, namespace: RELEASE_NAMESPACE, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const cluster = bed.kc.getCurrentCluster()!;
    const kubeconfig = join(dir, 'hook.kubeconfig');
    writeFileSync(kubeconfig, JSON.stringify({
      apiVersion: 'v1', kind: 'Config',
      clusters: [{ name: 'bed', cluster: { server: cluster.server, ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : { 'certificate-authority': cluster.caFile }) } }],
      users: [{ name: 'hook', user: { token: token.status!.token } }],
      contexts: [{ name: 'hook', context: { cluster: 'bed', user: 'hook' } }],
      'current-context': 'hook',
    }));

    // Pods as admission leaves them: ours hold the finalizer; one also holds another's.
    for (const body of [pod('pi-1', [LOG_ARCHIVE_FINALIZER]), pod('pi-1-exec-1', [LOG_ARCHIVE_FINALIZER]), pod('pi-1-exec-2', [LOG_ARCHIVE_FINALIZER]), pod('audited', [OTHER_FINALIZER, LOG_ARCHIVE_FINALIZER])]) {
      await core.createNamespacedPod({ namespace: APPS, body });
    }
    // Deleted while no controller runs (Spark's executor cleanup, a user's delete): Terminating.
    for (const name of ['pi-1-exec-1', 'audited']) await core.deleteNamespacedPod({ name, namespace: APPS });
    const terminating = async () => (await core.listNamespacedPod({ namespace: APPS })).items.filter((p) => p.metadata?.deletionTimestamp).map((p) => p.metadata!.name!).sort();
    t.same(await terminating(), ['audited', 'pi-1-exec-1'], 'without the hook, deleted pods stay Terminating');

    t.equal(await releaseFinalizersCommand([...container!.args!, '--kubeconfig', kubeconfig]), 0, 'the hook\'s command succeeds with the hook\'s own rights');

    const left = await eventually(async () => (await core.listNamespacedPod({ namespace: APPS })).items, (pods) => !pods.some((p) => p.metadata?.name === 'pi-1-exec-1'), { what: 'the Terminating pod to go' });
    t.same(left.map((p) => p.metadata!.name).sort(), ['audited', 'pi-1', 'pi-1-exec-2'], 'the Terminating pod of ours is gone');
    t.same(left.find((p) => p.metadata?.name === 'audited')?.metadata?.finalizers, [OTHER_FINALIZER], 'another controller\'s finalizer is left alone');
    t.ok(left.every((p) => !p.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER)), 'no pod holds ours any more');
    for (const name of ['pi-1', 'pi-1-exec-2']) await core.deleteNamespacedPod({ name, namespace: APPS });
    const after = await eventually(terminating, (names) => names.length === 1, { what: 'pods deleted after the hook to go' });
    t.same(after, ['audited'], 'pods deleted after the hook go at once; only the one held by another controller waits for it');
  });
}
