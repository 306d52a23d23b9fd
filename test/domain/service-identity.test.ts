// No application's pod may wear the labels the service's own pods are known by (issue 25,
// domain/service-identity.ts): the chart's NetworkPolicies admit the api and the notebook service
// to drivers' UI and Connect ports and the api to the History Server by them, so an executor a
// driver's code makes, a team's pod or a submission dressed so would pass for the api wherever the
// applications share the release's namespace. Admission (the webhook's, the API's and local
// mode's one function) refuses each; the API names the field first.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import {
  admitPod, type AdmissionContext, bareDriverPod, buildRules, executorPodRefusal, SERVICE_IDENTITY_LABELS, serviceIdentityLabel,
} from '../../domain/index.js';
import { refuseServiceLabels } from '../../submit-api/service-labels.js';
import { HttpError } from '../../submit-api/errors.js';
import { exampleCluster } from '../helpers/api.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
/** How the chart labels its api's pods (ss.selectorLabels, release "ss"). */
const apiLabels = { 'app.kubernetes.io/name': 'submission-service', 'app.kubernetes.io/instance': 'ss', 'app.kubernetes.io/component': 'api' };
const templates: Record<string, ApplicationConfig> = { dressed: { driver: { labels: { 'app.kubernetes.io/component': 'gateway' } } } };
const known: Record<string, ApplicationConfig> = { 'etl-a': {} };
const context: AdmissionContext = {
  rules, templates: (name) => templates[name], applications: (name) => known[name], newAppName: (job) => `${job}-1`,
};

const executor = (labels: Record<string, string>, owner = 'etl-a'): V1Pod => ({
  metadata: {
    name: `${owner}-exec-9`, namespace: 'spark-apps',
    labels: { 'spark-role': 'executor', 'submission-service/app-name': owner, ...labels },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner, uid: 'u' }],
  },
  spec: { containers: [{ name: 'spark-kubernetes-executor', image: 'apache/spark:3.5.7' }], serviceAccountName: 'spark-driver' },
});

const refusal = (pod: V1Pod) => {
  const admission = admitPod(pod, context);
  return admission.outcome === 'refused' ? admission : undefined;
};

t.test('the keys, found whatever their value', async (t) => {
  t.same(SERVICE_IDENTITY_LABELS, ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/component']);
  for (const key of SERVICE_IDENTITY_LABELS) t.equal(serviceIdentityLabel({ team: 'x', [key]: 'anything' }), key, key);
  t.equal(serviceIdentityLabel({ 'app.kubernetes.io/part-of': 'etl', 'app.kubernetes.io/version': '2', team: 'x' }), undefined, 'the other recommended labels stay free');
  t.equal(serviceIdentityLabel(undefined), undefined);
  t.equal(serviceIdentityLabel(Object.create({ 'app.kubernetes.io/name': 'inherited' }) as Record<string, string>), undefined, 'own keys only');
});

t.test('an executor (what a driver\'s code may create) wearing any of them is refused 403, its driver known or not', async (t) => {
  t.equal(refusal(executor({})), undefined, 'the executor as Spark writes it is admitted');
  for (const key of SERVICE_IDENTITY_LABELS) {
    const refused = refusal(executor({ [key]: apiLabels[key as keyof typeof apiLabels] }));
    t.equal(refused?.status, 403, `${key}: refused`);
    t.match(refused?.body.message, new RegExp(`executor pod etl-a-exec-9 carries the label "${key.replace(/\./g, '\\.')}"`));
  }
  t.equal(refusal(executor(apiLabels, 'ghost'))?.status, 403, 'an executor of a driver the service does not know too (it would not be ignored)');
  t.match(executorPodRefusal(executor(apiLabels), {}, rules), /mark the service's own pods/, 'the guard itself says why');
});

t.test('a driver wearing them is refused 400: a submission\'s labels, a team\'s pod, the config\'s driver or executor labels', async (t) => {
  const submitted = (labels?: Record<string, string>, configOverrides?: ApplicationConfig, configTemplateName?: string) =>
    bareDriverPod({ appName: 'etl-b', jobName: 'etl', namespace: 'spark-apps', labels, configOverrides, configTemplateName });
  t.equal(admitPod(submitted({ team: 'growth', 'app.kubernetes.io/part-of': 'etl' }), context).outcome, 'admitted', 'other labels pass');
  const cases: [string, V1Pod, RegExp][] = [
    ['the submission\'s labels', submitted({ 'app.kubernetes.io/component': 'api' }), /driver pod etl-b carries the label "app\.kubernetes\.io\/component"/],
    ['a team\'s own pod', { ...submitted(), metadata: { ...submitted().metadata, name: undefined, generateName: 'team-', labels: { 'submission-service/job-name': 'etl', ...apiLabels } } }, /driver pod team- carries/],
    ['configOverrides.driver.labels', submitted(undefined, { driver: { labels: { 'app.kubernetes.io/instance': 'ss' } } }), /the config's driver\.labels carries the label "app\.kubernetes\.io\/instance"/],
    ['configOverrides.executor.labels', submitted(undefined, { executor: { labels: { 'app.kubernetes.io/name': 'submission-service' } } }), /the config's executor\.labels carries/],
    ['a template\'s driver labels', submitted(undefined, undefined, 'dressed'), /the config's driver\.labels carries the label "app\.kubernetes\.io\/component"/],
  ];
  for (const [what, pod, reason] of cases) {
    const refused = refusal(pod);
    t.equal(refused?.status, 400, `${what}: refused`);
    t.match(refused?.body.message, reason, what);
  }
  t.equal(admitPod(submitted({ 'app.kubernetes.io/name': 'x' }), { ...context, dryRun: true }).outcome, 'refused', 'a dry run answers the same');
});

t.test('the API names the field before admission runs', async (t) => {
  const asked = (body: object) => {
    try {
      refuseServiceLabels(body as Parameters<typeof refuseServiceLabels>[0], {}, undefined);
      return undefined;
    } catch (error) {
      return error as HttpError;
    }
  };
  t.equal(asked({ jobName: 'etl', labels: { team: 'growth' } }), undefined);
  t.match(asked({ jobName: 'etl', labels: { 'app.kubernetes.io/component': 'api' } }), { statusCode: 400, message: /field "labels": the label "app\.kubernetes\.io\/component" marks the service's own pods/ });
  for (const role of ['driver', 'executor']) {
    t.match(asked({ jobName: 'etl', configOverrides: { [role]: { labels: { 'app.kubernetes.io/instance': 'ss' } } } }),
      { statusCode: 400, message: new RegExp(`field "configOverrides\\.${role}\\.labels": the label "app\\.kubernetes\\.io/instance"`) }, role);
  }
});
