// submissionInfo (cluster/submission-info.ts) and explainSizing (webhook/domain): what the app
// page says about a submission, on SPEC's example cluster.
import t from 'tap';
import { submissionInfo } from '../../cluster/submission-info.js';
import { ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, buildRules, explainSizing, sizeApplication } from '../../webhook/domain/index.js';
import { exampleCluster } from '../helpers/api.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'x' });
const sized = (config: object) => {
  const result = sizeApplication(config, rules);
  if (!result.ok) throw new Error('unschedulable');
  return result.config;
};

t.test('a pod that missed admission, a pod that is gone, an admitted pod', async (t) => {
  const config = sized({});
  const overrides = { executor: { cores: 6 } };
  const missed = submissionInfo({ metadata: { annotations: { [ANNOTATION_OVERRIDES]: JSON.stringify(overrides) } } }, config, undefined);
  t.same(missed, { configOverrides: overrides, driverPod: true, admittedBy: null, sizing: null }, 'no admission mark: flagged as null; no rules: no sizing');
  t.same(submissionInfo(undefined, config, rules).configOverrides, null, 'the pod is gone: overrides unknown');
  const admitted = submissionInfo({ metadata: { annotations: { [ANNOTATION_ADMITTED]: 'submission-service-rules/v1' } } }, config, rules);
  t.equal(admitted.admittedBy, 'submission-service-rules/v1');
  t.same(admitted.configOverrides, {}, 'no overrides given');
  t.equal(admitted.sizing?.driver.pool, 'n1-standard-2');
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
