// The webhook on executor pods, whatever Spark wrote (issue #17): an AdmissionReview of the
// executor fixture with a hostPath volume, a Secret its application does not mount, or another
// service account, or wearing the labels of the service's own pods, is denied (403, the reason
// in the status message); the pod as Spark writes it
// is admitted. Executors of a driver the service does not know get the policy's allowances only.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { reviewAdmission } from '../../webhook/server/review.js';
import { admit, loadReview } from '../fixtures/admission/context.js';

function reviewWith(change: (pod: V1Pod) => void) {
  const review = loadReview('executor-pod');
  change(review.request.object as V1Pod);
  return reviewAdmission(review, admit);
}

const cases: [string, (pod: V1Pod) => void, RegExp][] = [
  ['a hostPath volume (spark.kubernetes.executor.volumes.hostPath.*)', (pod) => { pod.spec!.volumes = [{ name: 'root', hostPath: { path: '/' } }]; }, /hostPath/],
  ['a Secret volume (spark.kubernetes.executor.secrets.*)', (pod) => { pod.spec!.volumes = [{ name: 'db-root-password-volume', secret: { secretName: 'db-root-password' } }]; }, /secret "db-root-password"/],
  ['an env var from a Secret (spark.kubernetes.executor.secretKeyRef.*)', (pod) => {
    pod.spec!.containers[0]!.env = [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db-root-password', key: 'password' } } }];
  }, /secret "db-root-password"/],
  ['another service account (spark.kubernetes.authenticate.executor.serviceAccountName)', (pod) => { pod.spec!.serviceAccountName = 'cluster-admin'; }, /service account "cluster-admin"/],
  // What the chart's NetworkPolicies admit the api by (issue 25): a driver's code dressing its executor as the api.
  ['the api\'s labels', (pod) => { Object.assign(pod.metadata!.labels!, { 'app.kubernetes.io/instance': 'ss', 'app.kubernetes.io/component': 'api' }); }, /carries the label "app\.kubernetes\.io\/instance"/],
];

for (const [what, change, reason] of cases) {
  t.test(`an executor pod with ${what} is denied`, async (t) => {
    const { review, outcome } = reviewWith(change);
    t.equal(outcome, 'refused');
    t.equal(review.response.allowed, false);
    t.equal(review.response.status?.code, 403);
    t.match(JSON.parse(review.response.status?.message ?? '{}').message, reason);
    t.notOk(review.response.patch, 'nothing patched');
  });
}

t.test('the executor as Spark writes it, with the driver\'s service account and its scratch dir, is admitted', async (t) => {
  const { review, outcome } = reviewWith((pod) => {
    pod.spec!.serviceAccountName = 'spark-driver';
    pod.spec!.volumes = [{ name: 'spark-local-dir-1', emptyDir: {} }, { name: 'kube-api-access-x', projected: { sources: [{ serviceAccountToken: { path: 'token' } }, { configMap: { name: 'kube-root-ca.crt' } }] } }];
  });
  t.equal(outcome, 'admitted');
  t.equal(review.response.allowed, true);
});

t.test('an executor of an unknown driver is denied a hostPath, and otherwise let through untouched', async (t) => {
  const unknown = (pod: V1Pod) => { pod.metadata!.labels!['submission-service/app-name'] = 'ghost-20250101-120000-aaaaa'; pod.metadata!.ownerReferences = []; };
  const denied = reviewWith((pod) => { unknown(pod); pod.spec!.volumes = [{ name: 'sock', hostPath: { path: '/var/run/docker.sock' } }]; });
  t.equal(denied.outcome, 'refused');
  t.equal(denied.review.response.status?.code, 403);
  const passed = reviewWith(unknown);
  t.equal(passed.outcome, 'ignored');
  t.equal(passed.review.response.allowed, true);
});

t.test('an executor is its driver\'s only in the driver\'s namespace, and by the uid its owner reference names', async (t) => {
  // The fixture's driver is known in spark-apps (context.ts) under the uid its owner reference names.
  const sized = reviewWith(() => undefined);
  t.equal(sized.outcome, 'admitted', 'the fixture executor is sized');
  const elsewhere = reviewWith((pod) => { pod.metadata!.namespace = 'team-b'; });
  t.equal(elsewhere.outcome, 'ignored', 'the same pod in another namespace names no driver of ours (owner references never cross namespaces)');
  const forgedUid = reviewWith((pod) => { pod.metadata!.ownerReferences![0].uid = '00000000-0000-4000-8000-000000000000'; });
  t.equal(forgedUid.outcome, 'ignored', 'another uid under the driver\'s name: another (deleted or re-created) driver');
});
