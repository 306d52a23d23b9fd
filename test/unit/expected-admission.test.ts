// The API's own admission of a submission (cluster/kubernetes/expected-admission.ts): the pod it
// writes is the pod admission renders from what it writes, whether it is rendered once (the bare
// pod with its owner added: the pod rendered for the config, with that owner) or again (a pod that
// differs otherwise, such as one with the launcher's Secret mounted).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { rulesFrom } from '../../cli/rules.js';
import { canonicalJson, expectedAdmission, ownerAddedOnly, sameJson } from '../../cluster/kubernetes/expected-admission.js';
import { admitPod, readConfig } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { withLauncherSecret } from '../../domain/launcher-credential.js';

const NS = 'spark-apps';
const rules = rulesFrom(undefined, NS);
const owner = [{ apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'app-1', uid: 'uid-1', controller: true }];
const bare = bareDriverPod({ appName: 'app-1', jobName: 'job', namespace: NS, configOverrides: { type: 'Python', mainApplicationFile: 'local:///app.py', arguments: ['10'] } });

/** The pod admission renders from `body` from scratch, as the webhook would. */
function rendered(body: V1Pod): V1Pod {
  const admission = admitPod(body, { rules, templates: () => undefined, applications: () => undefined, newAppName: () => 'app-1' });
  if (admission.outcome !== 'admitted') throw new Error(admission.outcome);
  return admission.pod;
}

t.test('the bare pod with its owner: the pod rendered once, with the owner, is the pod a second render gives', async (t) => {
  const admission = expectedAdmission(bare, NS, rules);
  if (admission?.outcome !== 'admitted') throw new Error('not admitted');
  const written = { ...bare, metadata: { ...bare.metadata, namespace: NS, ownerReferences: owner } };
  t.ok(ownerAddedOnly(written, bare), 'the shortcut applies');
  const pod = admission.admit(written);
  t.same(pod, rendered(written), 'the same pod as a render of what is written');
  t.same(pod.metadata?.ownerReferences, owner, 'owned by the Application');
  t.same(readConfig(pod), admission.config, 'the config the Application is created with');
});

t.test('a pod that differs otherwise (the launcher\'s Secret mounted, another label) is rendered again from what is written', async (t) => {
  const admission = expectedAdmission(bare, NS, rules);
  if (admission?.outcome !== 'admitted') throw new Error('not admitted');
  const withSecret = withLauncherSecret({ ...bare, metadata: { ...bare.metadata, namespace: NS, ownerReferences: owner } }, 'app-1-launcher');
  t.notOk(ownerAddedOnly(withSecret, bare));
  const pod = admission.admit(withSecret);
  t.same(pod, rendered(withSecret));
  t.ok(JSON.stringify(pod.spec).includes('app-1-launcher'), 'the Secret is in the pod written');
  const relabelled = { ...bare, metadata: { ...bare.metadata, labels: { ...bare.metadata!.labels, team: 'a' }, ownerReferences: owner } };
  t.notOk(ownerAddedOnly(relabelled, bare), 'a label of its own: not the same pod');
  t.equal(admission.admit(relabelled).metadata?.labels?.team, 'a');
});

t.test('sameJson says what comparing the two canonicalJson strings says, for every pair of these values', async (t) => {
  const config = readConfig(rendered(bare))!;
  // The same config with its keys in another order at every level (the apiserver sorts them).
  const reordered = JSON.parse(canonicalJson(config)) as unknown;
  const values: unknown[] = [
    config, reordered, { ...config, driver: undefined }, { ...config, engineConf: { ...config.engineConf, 'spark.x': '1' } },
    {}, { a: undefined }, { a: null }, { a: 1 }, { a: '1' }, { a: [1, 2] }, { a: [2, 1] }, { a: [1, undefined] }, { a: [1, null] },
    [], [{}], null, undefined, 0, '0', false, 'null', '{}', Number.NaN, new Date(0), new Date(0).toISOString(),
    { state: 'PENDING', transitions: [{ state: 'PENDING', at: '2026-01-01T00:00:00.000Z' }] },
    { transitions: [{ at: '2026-01-01T00:00:00.000Z', state: 'PENDING' }], state: 'PENDING', startedAt: undefined },
  ];
  let equalPairs = 0;
  for (const a of values) {
    for (const b of values) {
      const expected = canonicalJson(a) === canonicalJson(b);
      if (sameJson(a, b) !== expected) t.fail(`sameJson(${canonicalJson(a)}, ${canonicalJson(b)}) should be ${expected}`);
      if (expected) equalPairs += 1;
    }
  }
  t.ok(sameJson(config, reordered), 'key order does not count');
  t.notOk(sameJson(config, values[3]), 'one engineConf key more does');
  t.ok(equalPairs > values.length, 'some pairs of distinct values are equal (key order, undefined keys, NaN and null)');
});
