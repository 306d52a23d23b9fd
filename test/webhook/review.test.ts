import t from 'tap';
import jsonPatch from 'fast-json-patch';
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod } from '../../domain/index.js';
import { reviewAdmission, reviewText } from '../../webhook/server/review.js';
import { refusalFromMessage } from '../../webhook/server/refusal.js';
import { admit, context, KNOWN_APP, loadReview } from '../fixtures/admission/context.js';

const decode = (patch: string) => JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as jsonPatch.Operation[];

/** The pod the apiserver ends up with: the request's object with our patch applied. */
function patched(review: Record<string, any>, patch: string): V1Pod {
  return jsonPatch.applyPatch(structuredClone(review.request.object), decode(patch), true, false).newDocument;
}

const admittedCases = [
  ['bare-driver-pod', 'the bare driver pod the API writes'],
  ['team-labeled-pod', 'a pod a team labels itself'],
  ['executor-pod', 'an executor Spark creates for a known driver'],
] as const;

for (const [fixture, what] of admittedCases) {
  t.test(`${what} is admitted with a patch that yields the admitted pod`, async (t) => {
    const review = loadReview(fixture);
    const original = structuredClone(review.request.object);
    const { review: out, outcome } = reviewAdmission(review, admit);
    t.equal(outcome, 'admitted');
    t.same(Object.keys(out), ['apiVersion', 'kind', 'response']);
    t.equal(out.apiVersion, 'admission.k8s.io/v1');
    t.equal(out.kind, 'AdmissionReview');
    t.equal(out.response.uid, review.request.uid, 'uid echoed');
    t.equal(out.response.allowed, true);
    t.equal(out.response.patchType, 'JSONPatch');
    t.same(review.request.object, original, 'the request is not modified');
    const expected = admitPod(structuredClone(original), context);
    if (expected.outcome !== 'admitted') throw new Error('fixture not admitted by the domain');
    t.same(patched(review, out.response.patch!), JSON.parse(JSON.stringify(expected.pod)), 'patch applies back to exactly the admitted pod');
    t.equal(patched(review, out.response.patch!).metadata?.annotations?.['submission-service/admitted-by'], 'submission-service-rules/v1');
  });
}

t.test('a team pod with generateName only gets its app name from the context', async (t) => {
  const review = loadReview('team-labeled-pod');
  const pod = patched(review, reviewAdmission(review, admit).review.response.patch!);
  t.equal(pod.metadata?.name, 'nightly-report-20250101-120000-zzzzz');
  t.equal(pod.spec?.containers[0]?.env?.some((e) => e.name === 'REPORT_DAY'), true, 'the team env var is kept');
});

t.test('a pod that is not ours is allowed untouched', async (t) => {
  const review = loadReview('other-pod');
  const result = reviewAdmission(review, admit);
  t.equal(result.outcome, 'ignored');
  t.same(result.review.response, { uid: review.request.uid, allowed: true }, 'no patch, no patchType');
});

t.test('an executor of an unknown driver is allowed untouched', async (t) => {
  const review = loadReview('executor-pod');
  review.request.object.metadata.labels['submission-service/app-name'] = 'someone-else';
  review.request.object.metadata.ownerReferences[0].name = 'someone-else';
  t.same(reviewAdmission(review, admit).review.response, { uid: review.request.uid, allowed: true });
});

t.test('an unschedulable pod is refused with SPEC body as JSON in status.message', async (t) => {
  const review = loadReview('unschedulable-driver-pod');
  const { review: out, outcome } = reviewAdmission(review, admit);
  t.equal(outcome, 'refused');
  t.equal(out.response.allowed, false);
  t.equal(out.response.uid, review.request.uid);
  t.notOk(out.response.patch);
  t.match(out.response.status, { code: 422, reason: 'Invalid', status: 'Failure' });
  const body = JSON.parse(out.response.status!.message);
  t.same(Object.keys(body).sort(), ['advice', 'executor', 'message']);
  t.same(body.executor.targetInputConfig, { cores: 9 });
  // What the API sees from the apiserver, and reads back.
  const apiserverMessage = `admission webhook "pods.submission-service.webhook" denied the request: ${out.response.status!.message}`;
  t.same(refusalFromMessage(apiserverMessage), body);
  t.equal(refusalFromMessage('admission webhook "x" denied the request: plain words'), undefined);
});

t.test('a missing template is refused 404', async (t) => {
  const review = loadReview('team-labeled-pod');
  review.request.object.metadata.labels['submission-service/config-template'] = 'nope';
  t.match(reviewAdmission(review, admit).review.response.status, { code: 404, reason: 'NotFound' });
});

t.test('malformed reviews answer 400 and echo the uid when there is one', async (t) => {
  const review = loadReview('bare-driver-pod');
  const cases: [unknown, string][] = [
    [null, ''], [[], ''], ['text', ''], [{}, ''],
    [{ ...review, apiVersion: 'admission.k8s.io/v1beta1' }, review.request.uid],
    [{ ...review, kind: 'Pod' }, review.request.uid],
    [{ ...review, request: { ...review.request, uid: undefined } }, ''],
    [{ ...review, request: { ...review.request, uid: 42 } }, ''],
    [{ ...review, request: { ...review.request, object: 'pod' } }, review.request.uid],
    [{ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }, ''],
  ];
  for (const [body, uid] of cases) {
    const { review: out, outcome } = reviewAdmission(body, admit);
    t.equal(outcome, 'malformed');
    t.equal(out.response.uid, uid);
    t.match(out.response, { allowed: false, status: { code: 400, reason: 'BadRequest' } });
  }
  const truncated = reviewText(JSON.stringify(review).slice(0, 300), admit);
  t.equal(truncated.outcome, 'malformed');
  t.equal(truncated.review.response.uid, review.request.uid, 'uid read from JSON that does not parse');
});

t.test('other kinds and operations are allowed untouched', async (t) => {
  const review = loadReview('bare-driver-pod');
  const variants = [
    { ...review.request, kind: { group: 'apps', version: 'v1', kind: 'Deployment' } },
    { ...review.request, operation: 'UPDATE' },
    { ...review.request, operation: 'CREATE', subResource: 'binding', kind: { group: '', version: 'v1', kind: 'Binding' } },
    { ...review.request, subResource: 'ephemeralcontainers' },
  ];
  for (const request of variants) {
    const result = reviewAdmission({ ...review, request }, admit);
    t.equal(result.outcome, 'skipped');
    t.same(result.review.response, { uid: review.request.uid, allowed: true });
  }
});

t.test('a throwing admit function is a 500 denial, not an exception', async (t) => {
  const review = loadReview('bare-driver-pod');
  for (const thrown of [new Error('cache exploded'), 'a string', undefined]) {
    const result = reviewAdmission(review, () => { throw thrown; });
    t.equal(result.outcome, 'failed');
    t.match(result.review.response, { uid: review.request.uid, allowed: false, status: { code: 500, reason: 'InternalError' } });
  }
});

t.test('an admitted pod with no change has no patch', async (t) => {
  const review = loadReview('bare-driver-pod');
  const result = reviewAdmission(review, (pod) => ({ outcome: 'admitted', pod, appName: KNOWN_APP, config: {} }));
  t.same(result.review.response, { uid: review.request.uid, allowed: true });
});
