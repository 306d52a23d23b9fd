// Runs alone (scripts/test.sh): the real node is one per machine, and the chart starts the
// service's image five times over (two api, two webhook, one notebook service) on two cores.
//
// The Helm chart installed as a platform team installs it, onto the test bed's real node with
// the images this repository builds (images/build.sh, imported into the node's containerd):
// no process of the test bed's own serves anything, the chart's pods are the service. The
// release namespace enforces the `restricted` Pod Security Standard, so every pod of ours must
// meet it. Checked: every pod Ready; the webhook registered (its own CA in caBundle) and
// admitting, reached by the apiserver through its Service; a submission through the API's
// Service gets an admitted, sized driver pod with no review by the webhook (the API admits its
// own pods), while the admin's pod with the same mark is reviewed; `helm upgrade` with a changed value rolls the
// api and webhook pods while submissions keep coming, and none fails; `helm uninstall` removes
// the release and leaves what the chart says it keeps (manifests/README.md, "Uninstall").
import t, { type Test } from 'tap';
import { AdmissionregistrationV1Api, ApiextensionsV1Api, AppsV1Api, type CoreV1Api } from '@kubernetes/client-node';
import { APPS, chartNodeUnavailable, installChart, NS, post, RELEASE, readyPod } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { sample } from '../helpers/metrics.js';
import { chartDir } from '../manifests/helm.js';
import { ANNOTATION_ADMITTED, LABEL_JOB, LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';

const skip = chartNodeUnavailable();

/**
 * After uninstall: the auth Secret is kept with its keys, and the pre-delete hook took the
 * log-archive finalizer off the applications' pods, so one deleted now goes instead of staying
 * Terminating with no controller left.
 */
async function keptAfterUninstall(t: Test, core: CoreV1Api, adminId: string): Promise<void> {
  const auth = await core.readNamespacedSecret({ name: 'submission-service-auth', namespace: NS });
  t.match(Buffer.from(auth.data!['keys.json'], 'base64').toString(), adminId, 'the auth Secret is kept, with its keys');
  const pods = (await core.listNamespacedPod({ namespace: APPS })).items;
  t.same(pods.filter((p) => p.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER)).map((p) => p.metadata!.name), [], 'the hook took the log-archive finalizer off every pod');
  const victim = pods[0]?.metadata?.name;
  t.ok(victim, 'a driver pod is left to delete');
  await core.deleteNamespacedPod({ name: victim!, namespace: APPS, gracePeriodSeconds: 0 });
  await eventually(() => core.listNamespacedPod({ namespace: APPS }), (l) => !l.items.some((p) => p.metadata?.name === victim), { what: `${victim} to go`, timeoutMs: 300_000, intervalMs: 500 });
  t.pass('a pod deleted after uninstall goes: none stays Terminating');
}

// A cold image build alone takes tens of minutes on two busy cores.
t.setTimeout(120 * 60_000);

t.test('the chart, installed on a real node', { skip }, async (t) => {
  const started = Date.now();
  const { bed, version, values, helm, installSeconds, admin, base, agent } = await installChart(t);
  const { core, kc } = bed;
  const apps = kc.makeApiClient(AppsV1Api);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const extensions = kc.makeApiClient(ApiextensionsV1Api);

  const pods = (await core.listNamespacedPod({ namespace: NS })).items;
  t.same(pods.map((p) => p.metadata!.labels!['app.kubernetes.io/component']).sort(), ['api', 'api', 'gateway', 'webhook', 'webhook'], 'two api, two webhook and one notebook service pod');
  for (const pod of pods) t.ok(readyPod(pod), `${pod.metadata!.name} Ready`);
  t.ok(pods.every((p) => p.spec!.containers[0].image === `localhost/submission-service/submission-service:${version}`), 'from the image this repository builds');
  t.ok(pods.every((p) => (p.status?.containerStatuses?.[0].restartCount ?? 0) === 0), 'no container restarted on the way');

  const mwc = await admission.readMutatingWebhookConfiguration({ name: `submission-service-${NS}` });
  t.equal(mwc.webhooks?.length, 2, 'the webhook is registered (drivers, executors)');
  for (const hook of mwc.webhooks ?? []) {
    t.match(Buffer.from(hook.clientConfig.caBundle ?? '', 'base64').toString(), /BEGIN CERTIFICATE/, `${hook.name}: the webhook wrote its CA into caBundle`);
    t.same(hook.clientConfig.service, { namespace: NS, name: 'submission-service-webhook', path: '/mutate-pods', port: 443 }, `${hook.name}: called through its Service`);
  }

  // Reviews the chart's webhook pods answered, summed over their /metrics (pod IP, metrics port).
  const webhookReviews = async () => {
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/component=webhook' })).items;
    let sum = 0;
    for (const pod of pods) {
      const port = pod.spec!.containers[0].ports!.find((p) => p.name === 'metrics')!.containerPort;
      sum += sample(await (await fetch(`http://${pod.status!.podIP!}:${port}/metrics`)).text(), 'submission_service_admissions_total');
    }
    return sum;
  };

  await t.test('a submission through the Service gets an admitted, sized driver pod, without a call to the webhook', async (t) => {
    const reviewsBefore = await webhookReviews();
    const res = await post(agent, base, '/api/apps/', admin.key, { jobName: 'first', configOverrides: { executor: { cores: 2 } } });
    t.equal(res.status, 201, JSON.stringify(res.json));
    const pod = await core.readNamespacedPod({ name: res.json.appName, namespace: APPS });
    t.equal(pod.metadata?.annotations?.['submission-service/admitted-by'], 'submission-service-rules/v1', 'admitted with the installed chart\'s rules');
    t.ok(pod.metadata?.annotations?.['submission-service/sizing'], 'with its sizing decision');
    t.equal(pod.spec!.containers[0].image, 'localhost/submission-service/spark:3.5.7', 'the Spark image of the values');
    t.ok(pod.spec!.containers[0].resources?.requests?.cpu, 'sized');
    // The API admitted it in-process under its own service account; the chart's matchConditions
    // skip exactly that (docs/security.md). The same pod written by the admin is reviewed.
    t.equal(await webhookReviews(), reviewsBefore, 'the webhook answered no review for the API\'s pod');
    // Anyone else's pod with the mark is still reviewed (a dry run: nothing is created).
    await core.createNamespacedPod({
      namespace: APPS, dryRun: 'All',
      body: {
        metadata: { name: 'team-marked', labels: { [LABEL_JOB]: 'team' }, annotations: { [ANNOTATION_ADMITTED]: pod.metadata!.annotations![ANNOTATION_ADMITTED]! } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'spark-kubernetes-driver', image: 'example/anything' }] },
      },
    });
    t.equal(await webhookReviews(), reviewsBefore + 1, 'the admin\'s pod with the same mark is reviewed');
  });

  await t.test('helm upgrade with a changed value rolls api and webhook while submissions keep coming', async (t) => {
    const before = new Set((await core.listNamespacedPod({ namespace: NS })).items.map((p) => p.metadata!.name!));
    const results: (number | string)[] = [];
    let upgrading = true;
    const loop = async () => {
      while (upgrading) results.push((await post(agent, base, '/api/apps/', admin.key, { jobName: 'during-upgrade' })).status);
    };
    const loops = [loop(), loop()];
    const upgradeStart = Date.now();
    await helm(['upgrade', RELEASE, chartDir, '--namespace', NS, '--values', values, '--set', 'limits.submissionsPerMinute=120', '--wait', '--timeout', '15m']);
    // --wait returns when the new pods are Ready; the old ones may still be terminating.
    await eventually(() => core.listNamespacedPod({ namespace: NS }), (list) => list.items.every((p) => !before.has(p.metadata!.name!) || p.metadata!.labels!['app.kubernetes.io/component'] === 'gateway'),
      { what: 'the old api and webhook pods to be gone', timeoutMs: 300_000, intervalMs: 500 });
    const upgradeSeconds = (Date.now() - upgradeStart) / 1000;
    upgrading = false;
    await Promise.all(loops);
    const after = (await core.listNamespacedPod({ namespace: NS })).items;
    const rolled = after.filter((p) => !before.has(p.metadata!.name!)).map((p) => p.metadata!.labels!['app.kubernetes.io/component']).sort();
    t.same(rolled, ['api', 'api', 'webhook', 'webhook'], 'the api and webhook pods were replaced (the gateway does not read the config)');
    const config = await core.readNamespacedConfigMap({ name: 'submission-service-config', namespace: NS });
    t.match(config.data!['node-pools.json'], /"submissionsPerMinute": 120/, 'the new value is in the config');
    const failed = results.filter((status) => status !== 201);
    t.ok(results.length > 0, `${results.length} submissions during the upgrade`);
    t.same(failed, [], 'no submission failed during the roll');
    const deployment = await apps.readNamespacedDeployment({ name: 'submission-service-api', namespace: NS });
    t.equal(deployment.status?.updatedReplicas, 2, 'the api Deployment rolled to its new template');
    process.stderr.write(`chart-install: install ${installSeconds.toFixed(1)} s, upgrade until old pods gone ${upgradeSeconds.toFixed(1)} s with ${results.length} submissions, ${failed.length} failed\n`);
  });

  await t.test('helm uninstall removes the release and keeps what the chart says it keeps', async (t) => {
    const records = (await core.listNamespacedPod({ namespace: APPS })).items.length;
    await helm(['uninstall', RELEASE, '--namespace', NS, '--wait', '--timeout', '5m']);
    const left = async () => ({
      deployments: (await apps.listNamespacedDeployment({ namespace: NS })).items.length,
      services: (await core.listNamespacedService({ namespace: NS })).items.length,
      pods: (await core.listNamespacedPod({ namespace: NS })).items.length,
    });
    t.same(await eventually(left, (l) => l.pods === 0, { what: 'the release pods to go', timeoutMs: 300_000, intervalMs: 500 }), { deployments: 0, services: 0, pods: 0 }, 'no Deployment, Service or pod of the release is left');
    await t.rejects(admission.readMutatingWebhookConfiguration({ name: `submission-service-${NS}` }), { code: 404 }, 'the webhook is unregistered');
    await t.rejects(core.readNamespacedSecret({ name: 'submission-service-webhook-cert', namespace: NS }), { code: 404 }, 'its certificate Secret goes with it');
    // Kept: the CRDs (Helm never deletes crds/), the applications namespace with its records
    // and pods (helm.sh/resource-policy: keep), and the auth Secret with its keys.
    const crds = (await extensions.listCustomResourceDefinition()).items.map((c) => c.metadata!.name!).filter((n) => n.endsWith('.submission-service.io')).sort();
    t.same(crds, ['applications.submission-service.io', 'configtemplates.submission-service.io', 'jobprofiles.submission-service.io', 'schedules.submission-service.io'], 'the CRDs are kept');
    t.ok(await core.readNamespace({ name: APPS }), `namespace ${APPS} is kept`);
    t.equal((await core.listNamespacedPod({ namespace: APPS })).items.length, records, 'with its driver pods');
    await keptAfterUninstall(t, core, admin.id);
  });
  process.stderr.write(`chart-install: whole test ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});
