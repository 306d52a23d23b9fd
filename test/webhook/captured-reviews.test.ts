// The webhook against AdmissionReviews captured from the real apiserver (the test bed),
// not hand-made ones: test/fixtures/admission/capture.ts records them, with the objects
// the apiserver stored after our patch. Each review is replayed through reviewAdmission
// with the fixture context, and the patch applied to request.object must give what the
// apiserver ended up with on every field admission sets.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { Ajv } from 'ajv';
import jsonPatch from 'fast-json-patch';
import type { V1Pod } from '@kubernetes/client-node';
import { allSchemas, schemaIds } from '../../schemas/index.js';
import {
  type AdmissionContext, admitPod, ANNOTATION_ADMITTED, ANNOTATION_CONFIG, ANNOTATION_SIZING, LABEL_APP, LABEL_JOB, readConfig, RULES_VERSION,
} from '../../domain/index.js';
import { refusalFromMessage } from '../../webhook/server/refusal.js';
import { type AdmitFunction, reviewAdmission } from '../../webhook/server/review.js';
import { context } from '../fixtures/admission/context.js';

const load = (name: string): Record<string, any> =>
  JSON.parse(readFileSync(new URL(`../fixtures/admission/captured-${name}.json`, import.meta.url), 'utf8'));

const example = JSON.parse(readFileSync(new URL('../../examples/example-cluster.json', import.meta.url), 'utf8'));

const bareAdmitted = load('bare-driver-pod.admitted') as V1Pod;
const teamAdmitted = load('team-labeled-pod.admitted') as V1Pod;

/**
 * The fixture context, with what the live webhook knew besides it: the admitted driver's
 * effective config (its cache reads it from the stored pod, as readConfig does here), and
 * the random app name it drew for the generateName pod (the stored pod carries it).
 */
const captured: AdmissionContext = {
  ...context,
  applications: (name, uid) => (name === bareAdmitted.metadata!.name && (uid === undefined || uid === bareAdmitted.metadata!.uid)
    ? readConfig(bareAdmitted) : context.applications(name, uid)),
  newAppName: (jobName) => (jobName === teamAdmitted.metadata!.labels![LABEL_JOB]
    ? teamAdmitted.metadata!.labels![LABEL_APP]
    : context.newAppName(jobName)),
};
const admit: AdmitFunction = (pod) => admitPod(pod, captured);

const decode = (patch: string) => JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as jsonPatch.Operation[];

/** The fields admission sets, as the apiserver stored them. */
function admissionFields(pod: V1Pod) {
  const container = pod.spec?.containers[0];
  const annotations = pod.metadata?.annotations ?? {};
  return {
    image: container?.image,
    args: container?.args,
    resources: container?.resources,
    affinity: pod.spec?.affinity,
    tolerations: pod.spec?.tolerations,
    admittedBy: annotations[ANNOTATION_ADMITTED],
    config: annotations[ANNOTATION_CONFIG],
    sizing: annotations[ANNOTATION_SIZING],
  };
}

const admittedCases = [
  ['bare-driver-pod', 'the bare driver pod the API writes'],
  ['team-labeled-pod', 'a team pod with only the job label, overrides and generateName'],
  ['executor-pod', 'an executor shaped as Spark 3.5 writes it'],
  ['dry-run-driver-pod', 'a dryRun=All create'],
] as const;

for (const [name, what] of admittedCases) {
  t.test(`captured: ${what} is admitted with a patch that yields what the apiserver stored`, async (t) => {
    const review = load(name);
    const stored = load(`${name}.admitted`) as V1Pod;
    t.equal(review.apiVersion, 'admission.k8s.io/v1');
    t.equal(review.request.operation, 'CREATE');
    t.notOk(review.request.object.metadata.annotations?.[ANNOTATION_ADMITTED], 'the apiserver sent the pod before admission');
    if (name !== 'executor-pod') t.notOk(review.request.object.spec.containers[0].image, 'a driver arrives without an image');

    const original = structuredClone(review.request.object);
    const { review: out, outcome } = reviewAdmission(review, admit);
    t.equal(outcome, 'admitted');
    t.equal(out.response.uid, review.request.uid, 'uid echoed');
    t.equal(out.response.allowed, true);
    t.equal(out.response.patchType, 'JSONPatch');
    t.ok(out.response.patch, 'with a patch');
    t.same(review.request.object, original, 'the request is not modified');

    const patched = jsonPatch.applyPatch(structuredClone(review.request.object), decode(out.response.patch!), true, false).newDocument as V1Pod;
    const fields = admissionFields(patched);
    t.equal(fields.admittedBy, RULES_VERSION);
    t.ok(fields.image, 'an image is set');
    t.same(fields, admissionFields(stored), 'image, args, resources, affinity, tolerations and annotations match the stored pod');
    if (name === 'executor-pod') t.equal(fields.config, undefined, 'executors carry no config annotation');
    else t.same(JSON.parse(fields.config!), readConfig(stored), 'the effective config annotation');
  });
}

t.test('captured: the executor is sized from the driver it belongs to', async (t) => {
  const review = load('executor-pod');
  const pod = review.request.object as V1Pod;
  const owner = pod.metadata!.ownerReferences![0];
  t.equal(pod.metadata!.labels![LABEL_APP], bareAdmitted.metadata!.name);
  t.match(owner, { kind: 'Pod', name: bareAdmitted.metadata!.name, uid: bareAdmitted.metadata!.uid });
  t.match(pod.metadata!.labels, { 'spark-role': 'executor', 'spark-exec-id': '1', 'spark-exec-resourceprofile-id': '0' });
  t.match(pod.metadata!.labels!['spark-app-selector'], /^spark-[0-9a-f]{32}$/);
  const patched = jsonPatch.applyPatch(structuredClone(pod), decode(reviewAdmission(review, admit).review.response.patch!), true, false).newDocument;
  t.equal(patched.spec!.containers[0].resources!.requests!.cpu, readConfig(bareAdmitted)!.executor!.coreRequest);
});

t.test('captured: the generateName pod gets its app name as its pod name', async (t) => {
  const review = load('team-labeled-pod');
  t.equal(review.request.object.metadata.name, undefined, 'the apiserver has not named it yet');
  t.equal(review.request.name, undefined);
  const patched = jsonPatch.applyPatch(structuredClone(review.request.object), decode(reviewAdmission(review, admit).review.response.patch!), true, false).newDocument as V1Pod;
  t.equal(patched.metadata!.name, teamAdmitted.metadata!.name);
  t.equal(patched.metadata!.labels![LABEL_APP], teamAdmitted.metadata!.labels![LABEL_APP]);
  t.same(patched.spec!.containers[0].env!.find((e) => e.name === 'REPORT_DAY'), { name: 'REPORT_DAY', value: '2025-01-01' }, 'the team env var is kept');
});

t.test('captured: a dryRun=All create is reviewed with dryRun true', async (t) => {
  const review = load('dry-run-driver-pod');
  t.equal(review.request.dryRun, true);
  t.same(review.request.options.dryRun, ['All']);
  for (const name of ['bare-driver-pod', 'team-labeled-pod', 'executor-pod', 'unschedulable-driver-pod']) {
    t.equal(load(name).request.dryRun, false, `${name} is not a dry run`);
  }
});

t.test('captured: 9 executor cores are refused 422 with SPEC body', async (t) => {
  const review = load('unschedulable-driver-pod');
  const { review: out, outcome } = reviewAdmission(review, admit);
  t.equal(outcome, 'refused');
  t.equal(out.response.uid, review.request.uid, 'uid echoed');
  t.equal(out.response.allowed, false);
  t.notOk(out.response.patch);
  t.match(out.response.status, { code: 422, reason: 'Invalid', status: 'Failure' });

  const body = JSON.parse(out.response.status!.message);
  const ajv = new Ajv({ strict: false });
  for (const schema of allSchemas) ajv.addSchema(schema);
  const valid = ajv.getSchema(schemaIds.unschedulableError)!;
  t.ok(valid(body), `the body is SPEC's UnschedulableError: ${ajv.errorsText(valid.errors)}`);
  t.same(Object.keys(body).sort(), ['advice', 'executor', 'message']);
  t.same(body.executor.targetInputConfig, { cores: example.expected.rejectedExecutorCores });
  t.same(body.executor.availableNodePools, example.nodePools);

  // What the apiserver answered the create with, read back as the API reads it.
  const status = load('unschedulable-driver-pod.status');
  t.match(status, { kind: 'Status', status: 'Failure', code: 422, reason: 'Invalid' });
  t.same(refusalFromMessage(status.message), body);
});
