// submissionInfo (cluster/submission-info.ts), explainSizing and the sizing annotation admission
// writes (domain): what the app page says about a submission, on SPEC's example cluster.
import t from 'tap';
import { submissionInfo } from '../../cluster/submission-info.js';
import {
  admitPod, ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, ANNOTATION_SIZING, bareDriverPod, buildRules, explainSizing, readSizingAnnotation,
  SIZING_ANNOTATION_MAX_CHARS, sizeApplication, sizingAnnotation,
} from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'x' });
const sized = (config: object) => {
  const result = sizeApplication(config, rules);
  if (!result.ok) throw new Error('unschedulable');
  return result.config;
};

t.test('a pod that missed admission, a pod that is gone, an admitted pod', async (t) => {
  const config = sized({ executor: { cores: 6 } });
  const overrides = { executor: { cores: 6 } };
  const recorded = sizingAnnotation(config, rules);
  const missed = submissionInfo({ metadata: { annotations: { [ANNOTATION_OVERRIDES]: JSON.stringify(overrides), [ANNOTATION_SIZING]: recorded } } });
  t.same(missed, { configOverrides: overrides, driverPod: true, admittedBy: null, sizing: null }, 'no admission mark: flagged as null, and a sizing annotation on it is not trusted');
  t.same(submissionInfo(undefined).configOverrides, null, 'the pod is gone: overrides unknown');
  const admitted = submissionInfo({ metadata: { annotations: { [ANNOTATION_ADMITTED]: 'submission-service-rules/v1', [ANNOTATION_SIZING]: recorded } } });
  t.equal(admitted.admittedBy, 'submission-service-rules/v1');
  t.same(admitted.configOverrides, {}, 'no overrides given');
  t.same(admitted.sizing, explainSizing(config, rules), 'the decision as admission recorded it, read without any rules');
  t.equal(submissionInfo({ metadata: { annotations: { [ANNOTATION_ADMITTED]: 'submission-service-rules/v1' } } }).sizing, null, 'admitted before decisions were recorded: unknown');
});

t.test('admission records the sizing decision on the driver pod, compact and bounded', async (t) => {
  const bare = bareDriverPod({ appName: 'a-20260101-000000-abcde', jobName: 'a', namespace: 'x', configOverrides: { executor: { cores: 6 } } });
  const admission = admitPod(bare, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => j });
  if (admission.outcome !== 'admitted') throw new Error(admission.outcome);
  const driverConfig = admission.config;
  const text = admission.pod.metadata!.annotations![ANNOTATION_SIZING];
  t.same(readSizingAnnotation(text), explainSizing(admission.config, rules), 'the annotation reads back as explainSizing\'s answer');
  t.equal(readSizingAnnotation(text)?.executor.pool, 'n1-standard-8');
  t.ok(text.length < 2048, `about a kilobyte (${text.length} characters)`);
  t.equal(executorHasNoSizing(), true, 'executors carry none: their driver has it');

  // Whatever the rules say (a pool name of 300 characters), the annotation stays under its cap.
  const long = buildRules({ nodePools: exampleCluster().nodePools.map((p) => ({ ...p, instanceName: p.instanceName + 'x'.repeat(300) })), namespace: 'x' });
  const worst = sizingAnnotation(sized({ executor: { cores: 6, coreRequest: '1000m', memory: '3000m' } }), long);
  t.ok(worst.length <= SIZING_ANNOTATION_MAX_CHARS, `bounded (${worst.length} ≤ ${SIZING_ANNOTATION_MAX_CHARS})`);
  t.match(readSizingAnnotation(worst)?.executor.pool, /…$/, 'long names are cut');
  t.equal(readSizingAnnotation('{"driver":{"pool":1}}'), null, 'not what admission writes: null');
  t.equal(readSizingAnnotation('not json'), null);
  t.equal(readSizingAnnotation('x'.repeat(SIZING_ANNOTATION_MAX_CHARS + 1)), null, 'too long to be ours');

  function executorHasNoSizing(): boolean {
    const pod = { metadata: { name: 'e', labels: { 'spark-role': 'executor', 'submission-service/app-name': 'a-20260101-000000-abcde' } }, spec: { containers: [{ name: 'x' }] } };
    const executor = admitPod(pod, { rules, templates: () => undefined, applications: () => driverConfig, newAppName: (j) => j });
    return executor.outcome === 'admitted' && executor.pod.metadata?.annotations?.[ANNOTATION_SIZING] === undefined;
  }
});

t.test('explainSizing: SPEC\'s figures and their reasons', async (t) => {
  const e = explainSizing(sized({ executor: { cores: 6 } }), rules);
  t.equal(e.executor.pool, 'n1-standard-8', '6 cores: the 8-core pool');
  t.same(e.executor.reasons.slice(1), ['CPU request 5100m: the pool\'s share 6/8 of 6800m.', 'Memory 12261m: the share 6/8 of 16348 MiB.']);
  t.match(e.driver.reasons[2], /710m: the share 1\/2 of 1700m \(850m\) minus 140m/, 'the default driver\'s reserve');
  const explicit = explainSizing(sized({ executor: { cores: 2, coreRequest: '1000m', memory: '3000m' } }), rules);
  t.same(explicit.executor.reasons.slice(-2), ['CPU request 1000m: as given in the submission (rule 6).', 'Memory 3000m: as given in the submission (rule 6).']);
  const gone = explainSizing({ executor: { cores: 64 } }, rules);
  t.equal(gone.executor.pool, null, 'no pool of the current rules');
});

t.test('the sizing annotation of one config under one set of rules is made once; other rules or a history decision make their own', async (t) => {
  const config = sized({ executor: { cores: 6 } });
  const first = sizingAnnotation(config, rules);
  t.equal(sizingAnnotation(config, rules), first, 'the same text again');
  t.equal(sizingAnnotation(structuredClone(config), rules), first, 'an equal config: the same text');
  const other = buildRules({ nodePools: exampleCluster().nodePools.map((p) => ({ ...p, instanceName: `${p.instanceName}-b` })), namespace: 'x' });
  t.equal(readSizingAnnotation(sizingAnnotation(config, other))?.executor.pool, 'n1-standard-8-b', 'new rules: their own text');
  t.equal(sizingAnnotation(config, rules), first, 'and the first rules\' text is still theirs');
  const history = { mode: 'recommend' as const, applied: false, asked: { cores: 6, memory: '12261m', instances: 1 }, basedOn: ['a-1'], reasons: ['Recommended (not applied): x.'] };
  t.same(JSON.parse(sizingAnnotation(config, rules, history)).history, history, 'a history decision is in its text');
  t.equal(sizingAnnotation(config, rules), first, 'and not in the text without one');
});
