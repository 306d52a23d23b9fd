import t from 'tap';
import { applyDefaults, buildRules, deepMerge, effectiveConfig } from '../../domain/index.js';

const rules = buildRules({
  nodePools: [{ cloudProvider: 'gce', instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false }],
  images: { '3.0.0': 'registry.example/spark:3.0.0-special' },
});

t.test('deep merge: objects merge, arrays replaced, override wins, inputs untouched', async (t) => {
  const base = { a: { x: 1, y: [1, 2] }, b: 'base' };
  const over = { a: { y: [3] }, b: 'over' };
  t.same(deepMerge<object>(base, over), { a: { x: 1, y: [3] }, b: 'over' });
  t.same(base, { a: { x: 1, y: [1, 2] }, b: 'base' });
  t.same(deepMerge<object>({ a: 1 }, undefined), { a: 1 });
});

t.test('defaults', async (t) => {
  const c = applyDefaults({ engineVersion: '3.0.0' }, rules);
  t.equal(c.mode, 'cluster');
  t.equal(c.image, 'registry.example/spark:3.0.0-special', 'image from the per-version map');
  t.equal(applyDefaults({ engineVersion: '3.4.1' }, rules).image, 'apache/spark:3.4.1', 'pattern for other versions');
  t.same(c.restartPolicy, { type: 'Never' });
  t.equal(c.driver?.serviceAccount, 'spark-driver');
  t.equal(c.engineConf?.['spark.dynamicAllocation.enabled'], 'true');
  t.equal(c.engineConf?.['spark.dynamicAllocation.shuffleTracking.enabled'], 'true');
  t.notOk(applyDefaults({ engineVersion: '2.4.4' }, rules).engineConf?.['spark.dynamicAllocation.enabled']);
  const off = applyDefaults({ engineVersion: '3.5.7', engineConf: { 'spark.dynamicAllocation.enabled': 'false' } }, rules);
  t.equal(off.engineConf?.['spark.dynamicAllocation.enabled'], 'false', 'the user wins over defaults');
  t.equal(applyDefaults({ mainApplicationFile: 'local:///x/job.py' }, rules).type, 'Python');
});

t.test('CloudServiceAccount secret sets the object-storage settings to key.json', async (t) => {
  const c = applyDefaults({ driver: { secrets: [{ name: 'gcs', path: '/secrets/gcs/', secretType: 'CloudServiceAccount' }] } }, rules);
  t.equal(c.engineConf?.['spark.hadoop.google.cloud.auth.service.account.json.keyfile'], '/secrets/gcs/key.json');
  t.equal(c.engineConf?.['spark.hadoop.fs.gs.auth.service.account.json.keyfile'], '/secrets/gcs/key.json');
  t.equal(c.engineConf?.['spark.executorEnv.GOOGLE_APPLICATION_CREDENTIALS'], '/secrets/gcs/key.json');
});

t.test('template then overrides', async (t) => {
  const templates = (name: string) => (name === 'base' ? { engineConf: { 'spark.a': '1', 'spark.b': '2' }, executor: { instances: 3 } } : undefined);
  const r = effectiveConfig('base', { engineConf: { 'spark.b': '3' } }, rules, templates);
  t.ok(r.ok);
  if (r.ok) t.match(r.config, { engineConf: { 'spark.a': '1', 'spark.b': '3' }, executor: { instances: 3 } });
  const missing = effectiveConfig('nope', {}, rules, templates);
  t.match(missing, { ok: false, status: 404 });
});
