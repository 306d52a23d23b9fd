// Admission in one place (issue 28): the API admits its own driver pods and the webhook admits
// everyone else's, so the two must hold one policy. In the chart both mount one ConfigMap, the
// node-pool file, and each follows it (cli/watched-rules.ts). Here each enforcement point gets
// its own watcher of one file, as two processes would, on the test bed's apiserver: the pods
// either admits say the same policy version and are the same pod; a change of the file reaches
// both without a restart; a broken file changes neither.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_POLICY } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { policyVersionOf, WatchedRules } from '../../cli/watched-rules.js';
import { exampleClusterFile } from '../helpers/api.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';

const admitted = (pod: V1Pod) => ({ labels: pod.metadata?.labels, annotations: pod.metadata?.annotations, spec: pod.spec });

t.test('the API and the webhook follow one node-pool file: same version, same pods, a change reaches both', async (t) => {
  const file = join(t.testdir(), 'node-pools.json');
  const original = readFileSync(exampleClusterFile, 'utf8');
  writeFileSync(file, original);
  const logs: string[] = [];
  const watch = () => new WatchedRules({ file, namespace: 'spark-apps', pollMs: 100, log: (m) => logs.push(m) }).watch();
  const sources = { webhook: watch(), api: watch() };
  t.teardown(() => { sources.webhook.close(); sources.api.close(); });
  const bed = await startKubeBed(t, { apiIdentity: true, ruleSources: sources });
  const { namespace } = bed;
  const { core } = bed.clients;
  const overrides = { executor: { cores: 4 } };

  /** A submission through the API, and the same bare pod through the webhook (the admin's dry run). */
  const bothWays = async (jobName: string) => {
    const res = await bed.call('POST', '/api/apps/', { jobName, configOverrides: overrides });
    t.equal(res.status, 201, `${jobName} submitted`);
    const { appName } = res.json;
    const byApi = await core.readNamespacedPod({ name: appName, namespace });
    // The same bare pod through the webhook, once the name is free again.
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    await eventually(() => core.readNamespacedPod({ name: appName, namespace }).then(() => false, () => true), Boolean, { what: 'the pod to go' });
    const bare = bareDriverPod({ appName, jobName, namespace, configOverrides: overrides });
    bare.metadata!.ownerReferences = byApi.metadata!.ownerReferences;
    const byWebhook = await core.createNamespacedPod({ namespace, body: bare, dryRun: 'All' });
    t.equal(bed.reviews.filter((r) => r.appName === appName).length, 1, 'the bare pod went to the webhook, the API\'s did not');
    return { byApi, byWebhook };
  };
  const memoryOf = (pod: V1Pod) => pod.spec!.containers[0].resources!.requests!.memory;
  const sameBut = (a: V1Pod, b: V1Pod) => t.same(admitted(a).spec, admitted(b).spec, 'the webhook admits the pod the API wrote');

  const v1 = policyVersionOf(original);
  const first = await bothWays('before');
  t.equal(first.byApi.metadata?.annotations?.[ANNOTATION_POLICY], v1, `the API admitted under ${v1}`);
  t.equal(first.byWebhook.metadata?.annotations?.[ANNOTATION_POLICY], v1, 'the webhook too');
  sameBut(first.byApi, first.byWebhook);

  const changed = JSON.stringify({ ...JSON.parse(original), sizing: { memoryOverheadFactor: 0.6 } }, null, 2);
  const v2 = policyVersionOf(changed);
  writeFileSync(file, changed);
  await eventually(async () => [sources.webhook.version, sources.api.version], (vs) => vs.every((v) => v === v2), { what: 'both copies to follow the file', timeoutMs: 120_000 });
  const second = await bothWays('after');
  t.equal(second.byApi.metadata?.annotations?.[ANNOTATION_POLICY], v2, `after the change the API admits under ${v2}`);
  t.equal(second.byWebhook.metadata?.annotations?.[ANNOTATION_POLICY], v2, 'and the webhook too, without a restart');
  t.not(memoryOf(second.byApi), memoryOf(first.byApi), `the new sizing is in force (${memoryOf(first.byApi)} -> ${memoryOf(second.byApi)})`);
  sameBut(second.byApi, second.byWebhook);

  writeFileSync(file, '{"nodePools": [');
  t.equal(sources.webhook.reload(), false, 'a broken file is refused');
  t.equal(sources.api.reload(), false);
  t.ok(logs.some((m) => m.includes(`kept ${v2}`)), 'and each says it kept the last good rules');
  const third = await bothWays('broken');
  t.equal(third.byApi.metadata?.annotations?.[ANNOTATION_POLICY], v2, 'pods are still admitted under the last good version');
  t.equal(third.byWebhook.metadata?.annotations?.[ANNOTATION_POLICY], v2);
});
