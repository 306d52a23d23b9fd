// The webhook as the real kube-apiserver calls it: pods created directly through the
// apiserver (client-node, not our API) come back admitted, sized and placed, or refused.
import t, { type Test } from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { GROUP, TEMPLATES, VERSION } from '../../cluster/kubernetes/client.js';
import { apiStatus } from '../../cluster/kubernetes/errors.js';
import {
  ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, bareDriverPod, LABEL_JOB, LABEL_TEMPLATE, readConfig, RULES_VERSION,
} from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { eventually, type KubeBed, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';

const example = exampleCluster();

t.test('admission through the real apiserver', async (t) => {
  const bed = await startKubeBed(t);
  const { core, custom } = bed.clients;
  const namespace = bed.namespace;
  const create = (body: V1Pod) => core.createNamespacedPod({ namespace, body });

  t.test('a bare driver pod comes back as a complete, sized, placed driver', async (t) => {
    const pod = await create(bareDriverPod({ appName: 'direct-20250101-000000-aaaaa', jobName: 'direct', namespace }));
    const [container] = pod.spec!.containers;
    t.equal(container.image, 'apache/spark:3.5.7', 'image of the default engine version');
    t.equal(container.args?.[0], 'driver', 'args start with driver');
    t.equal(container.resources?.requests?.cpu, example.expected.defaultDriver.coreRequest, 'cpu 710m');
    t.equal(container.resources?.requests?.memory, '2860Mi', 'memory 2043m plus the 40% overhead');
    t.equal(container.resources?.limits?.memory, '2860Mi');
    const terms = pod.spec!.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    const stable = example.nodePools.filter((p) => !p.preemptible).map((p) => p.instanceName);
    t.same(terms?.[0].matchExpressions?.find((e) => e.key === 'node.kubernetes.io/instance-type'),
      { key: 'node.kubernetes.io/instance-type', operator: 'In', values: stable }, 'required affinity to the non-preemptible pool');
    t.ok(terms?.[0].matchExpressions?.some((e) => e.operator === 'NotIn' && e.values?.includes('true')), 'and away from preemptible nodes');
    t.equal(pod.metadata?.annotations?.[ANNOTATION_ADMITTED], RULES_VERSION, 'admitted-by annotation');
    t.equal(readConfig(pod)?.driver?.memory, example.expected.defaultDriver.memory, 'the effective config rides along');
  });

  t.test("a team's own pod with only the job label is sized like a submission", async (t) => {
    const overrides = { engineConf: { 'spark.team': 'yes' }, executor: { cores: 4 } };
    const pod = await create({
      metadata: { generateName: 'team-pod-', labels: { [LABEL_JOB]: 'team' }, annotations: { [ANNOTATION_OVERRIDES]: JSON.stringify(overrides) } },
      spec: { containers: [{ name: 'main' }] },
    } as V1Pod);
    const submitted = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'team', configOverrides: overrides });
    t.equal(submitted.status, 200);
    const config = readConfig(pod)!;
    t.same(config.executor, submitted.json.config.executor, 'executor as a submission gets it');
    t.same(config.driver, submitted.json.config.driver, 'driver as a submission gets it');
    t.same(config.engineConf, submitted.json.config.engineConf);
    t.same(config.executor?.coreRequest, example.expected.executorByCores['4'].coreRequest);
    t.equal(pod.metadata?.labels?.['spark-role'], 'driver');
    t.equal(pod.metadata?.labels?.['submission-service/app-name'], pod.metadata?.name, 'its name is its appName');
    t.equal(pod.spec!.containers[0].image, submitted.json.config.image);
    t.equal(pod.spec!.containers[0].resources?.requests?.cpu, '710m');
    t.equal(pod.metadata?.annotations?.[ANNOTATION_ADMITTED], RULES_VERSION);
  });

  t.test('a Spark-shaped executor pod gets its application executor size and the preemptible toleration', async (t) => {
    const res = await bed.call('POST', '/api/apps/', { jobName: 'withexec', configOverrides: { executor: { cores: 4 } } });
    t.equal(res.status, 201);
    const appName = res.json.appName;
    const driver = await core.readNamespacedPod({ name: appName, namespace });
    // No wait for the webhook to know the driver: it reads it (one GET) on its first executor.
    const executor = await create(sparkExecutorPod(driver, 1, namespace));
    const { requests, limits } = executor.spec!.containers[0].resources!;
    t.equal(requests?.cpu, '3400m', 'cpu of the 4-core pool share');
    t.equal(requests?.memory, '11442Mi', '8173m plus the 40% overhead');
    t.equal(limits?.memory, '11442Mi');
    t.same(executor.spec!.tolerations?.find((x) => x.key === 'submission-service/preemptible'),
      { key: 'submission-service/preemptible', operator: 'Equal', value: 'true', effect: 'NoSchedule' });
    t.equal(executor.metadata?.annotations?.[ANNOTATION_ADMITTED], RULES_VERSION);
    t.notOk(executor.spec!.affinity, 'executors are not pinned to the stable pool');
  });

  t.test('an executor pod with a hostPath, a foreign Secret or service account, or the api\'s labels, is denied by the apiserver (issues #17, 25)', (t) => guardedExecutorsRefused(t, bed));

  t.test('a team\'s driver pod wearing the service\'s own labels is denied by the apiserver (issue 25)', (t) => dressedDriverRefused(t, bed));

  t.test('a pod without our labels is untouched', async (t) => {
    const body: V1Pod = {
      metadata: { name: 'someone-else', labels: { app: 'other' } },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu: '123m', memory: '77Mi' } } }] },
    };
    const pod = await create(body);
    t.equal(pod.spec!.containers[0].image, 'busybox:1.36');
    t.same(pod.spec!.containers[0].resources, { requests: { cpu: '123m', memory: '77Mi' } });
    t.notOk(pod.metadata?.annotations?.[ANNOTATION_ADMITTED], 'no admitted-by annotation');
    t.notOk(pod.spec!.affinity);
    t.notOk(pod.spec!.tolerations?.some((x) => x.key === 'submission-service/preemptible'));
  });

  t.test('executor cores 9 is refused by the apiserver with the 422 body of SPEC inside', async (t) => {
    const error = await create(bareDriverPod({ appName: 'toobig-20250101-000000-aaaaa', jobName: 'toobig', namespace, configOverrides: { executor: { cores: 9 } } }))
      .then(() => undefined, (e: unknown) => e);
    t.ok(error, 'refused');
    const { code, status } = apiStatus(error);
    t.equal(code, 422);
    const message = status?.message ?? '';
    t.match(message, /admission webhook "pods\.submission-service\.webhook" denied the request: /);
    const body = JSON.parse(message.slice(message.indexOf('{')));
    t.same(Object.keys(body).sort(), ['advice', 'executor', 'message']);
    t.match(body.advice, /modify/i);
    t.match(body.message, /unschedulable/i);
    t.same(body.executor.availableNodePools, example.nodePools, 'every pool, field for field');
    t.equal(body.executor.targetInputConfig.cores, 9);
    await t.rejects(core.readNamespacedPod({ name: 'toobig-20250101-000000-aaaaa', namespace }), 'no pod was created');
  });

  t.test('a template created as a ConfigTemplate custom resource is merged', async (t) => {
    const config = { engineVersion: '4.2.0', engineConf: { 'spark.from-template': 'a', 'spark.both': 'template' }, executor: { cores: 2, instances: 3 } };
    await custom.createNamespacedCustomObject({
      group: GROUP, version: VERSION, namespace, plural: TEMPLATES,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'ConfigTemplate', metadata: { name: 'crd-made' }, spec: { config } },
    });
    await eventually(async () => bed.webhook.cache.templates.has('crd-made'), Boolean, { what: 'the webhook to see the template' });
    const overrides = { engineConf: { 'spark.both': 'override' }, executor: { cores: 6 } };
    const pod = await create(bareDriverPod({ appName: 'tpl-20250101-000000-aaaaa', jobName: 'tpl', namespace, configTemplateName: 'crd-made', configOverrides: overrides }));
    const effective = readConfig(pod)!;
    t.equal(effective.engineVersion, '4.2.0', 'from the template');
    t.equal(effective.image, 'apache/spark:4.2.0', 'the image follows the template engine version');
    t.equal(effective.engineConf?.['spark.from-template'], 'a');
    t.equal(effective.engineConf?.['spark.both'], 'override', 'overrides win');
    t.equal(effective.executor?.instances, 3, 'template value kept');
    t.equal(effective.executor?.cores, 6);
    t.equal(effective.executor?.coreRequest, example.expected.executorByCores['6'].coreRequest);
    t.equal(pod.metadata?.labels?.[LABEL_TEMPLATE], 'crd-made');
  });
});

/** A driver pod dressed as the api (the chart's NetworkPolicies admit the api by these labels) never gets in. */
async function dressedDriverRefused(t: Test, bed: KubeBed) {
  const body = bareDriverPod({ appName: 'dressed-20250101-000000-aaaaa', jobName: 'dressed', namespace: bed.namespace, labels: { 'app.kubernetes.io/component': 'api' } });
  const error = await bed.clients.core.createNamespacedPod({ namespace: bed.namespace, body }).then(() => undefined, (e: unknown) => e);
  t.ok(error, 'refused');
  t.match(apiStatus(error).status?.message, /carries the label \\"app\.kubernetes\.io\/component\\"/);
  await t.rejects(bed.clients.core.readNamespacedPod({ name: body.metadata!.name!, namespace: bed.namespace }), 'no pod was created');
}

/** Executors the guard refuses, each as Spark would write it but for one thing (domain/executor-guard.ts). */
async function guardedExecutorsRefused(t: Test, bed: KubeBed) {
  const { core } = bed.clients;
  const namespace = bed.namespace;
  const create = (body: V1Pod) => core.createNamespacedPod({ namespace, body });
  const res = await bed.call('POST', '/api/apps/', { jobName: 'guarded', configOverrides: {} });
  t.equal(res.status, 201);
  const appName = res.json.appName;
  const driver = await core.readNamespacedPod({ name: appName, namespace });
  const variants: [string, (pod: V1Pod) => void, RegExp][] = [
    ['hostpath', (pod) => { pod.spec!.volumes = [{ name: 'root', hostPath: { path: '/' } }]; }, /hostPath/],
    // (the reason arrives as JSON inside the apiserver's message: its quotes are escaped)
    ['secret', (pod) => { pod.spec!.volumes = [{ name: 's', secret: { secretName: 'db-root-password' } }]; }, /secret \\"db-root-password\\"/],
    ['account', (pod) => { pod.spec!.serviceAccountName = 'cluster-admin'; }, /service account \\"cluster-admin\\"/],
    // Dressed as the api, the chart's NetworkPolicies would admit it to drivers' UIs and the History Server (issue 25).
    ['identity', (pod) => { Object.assign(pod.metadata!.labels!, { 'app.kubernetes.io/instance': 'ss', 'app.kubernetes.io/component': 'api' }); }, /the label \\"app\.kubernetes\.io\/instance\\"/],
  ];
  for (const [suffix, change, reason] of variants) {
    const body = sparkExecutorPod(driver, 1, namespace);
    body.metadata!.name = `${appName}-exec-${suffix}`;
    change(body);
    const error = await create(body).then(() => undefined, (e: unknown) => e);
    t.ok(error, `${suffix}: refused`);
    t.match(apiStatus(error).status?.message, /admission webhook "executors\.submission-service\.webhook" denied the request/);
    t.match(apiStatus(error).status?.message, reason);
    await t.rejects(core.readNamespacedPod({ name: body.metadata!.name!, namespace }), `${suffix}: no pod was created`);
  }
}
