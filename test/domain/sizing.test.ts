import { readFileSync } from 'node:fs';
import t from 'tap';
import { buildRules, effectiveConfig, sizeApplication, applyDefaults } from '../../domain/index.js';

const example = JSON.parse(readFileSync(new URL('../../examples/example-cluster.json', import.meta.url), 'utf8'));
const rules = buildRules({ nodePools: example.nodePools });
const noTemplates = () => undefined;
const size = (overrides: object) => effectiveConfig(undefined, overrides, rules, noTemplates);

t.test('SPEC figures for the example cluster', async (t) => {
  const d = size({ engineVersion: '3.5.7' });
  if (!d.ok) throw new Error('default refused');
  t.same(d.config.driver, { serviceAccount: 'spark-driver', ...example.expected.defaultDriver }, 'default driver 710m / 2043m');
  t.same(d.config.executor, example.expected.defaultExecutor, 'default executor');
  for (const [cores, want] of Object.entries(example.expected.executorByCores) as [string, { coreRequest: string; memory: string }][]) {
    const r = size({ executor: { cores: Number(cores) } });
    t.ok(r.ok, `${cores} cores admitted`);
    if (r.ok) t.match(r.config.executor, { cores: Number(cores), ...want }, `${cores} cores`);
  }
});

t.test('refusal body for cores above every pool', async (t) => {
  const r = size({ executor: { cores: example.expected.rejectedExecutorCores } });
  t.equal(r.ok, false);
  if (r.ok) return;
  t.equal(r.status, 422);
  t.same(Object.keys(r.body).sort(), ['advice', 'executor', 'message']);
  const body = r.body as { executor: { availableNodePools: unknown[]; targetInputConfig: unknown } };
  t.same(body.executor.targetInputConfig, { cores: 9 });
  t.same(body.executor.availableNodePools, example.nodePools, 'every pool with its seven fields, as in the file');
});

t.test('a driver above every non-preemptible pool is refused under driver', async (t) => {
  const r = size({ driver: { cores: 4 } });
  t.equal(r.ok, false);
  if (r.ok) return;
  const body = r.body as unknown as Record<string, { availableNodePools: { preemptible: boolean }[] }>;
  t.notOk(body.executor, 'executor fits');
  t.ok(body.driver.availableNodePools.every((p) => !p.preemptible), 'only pools a driver may use');
});

t.test('explicit coreRequest and memory are kept and must fit', async (t) => {
  const kept = size({ executor: { cores: 4, coreRequest: '1000m' } });
  t.ok(kept.ok);
  if (kept.ok) t.match(kept.config.executor, { cores: 4, coreRequest: '1000m', memory: '8173m' });
  const big = size({ executor: { cores: 2, memory: '20g' } });
  t.equal(big.ok, false, '20g fits no pool');
  const moved = size({ executor: { cores: 2, memory: '6g' } });
  t.ok(moved.ok);
  if (moved.ok) t.match(moved.config.executor, { coreRequest: '1700m', memory: '6g' }, '6g moves to the 4-core pool: 2/4 of 3400m');
});

t.test('any node-pool file: maxima derived by rule 5, shares by rule 2', async (t) => {
  const custom = buildRules({ nodePools: [
    { cloudProvider: 'aws', instanceName: 'm5.xlarge', cpu: 4, memoryMib: 16384, preemptible: false },
    { cloudProvider: 'aws', instanceName: 'm5.4xlarge', cpu: 16, memoryMib: 65536, preemptible: true },
  ] });
  t.equal(custom.pools[0].maximumSchedulableCoreRequest, 3.4);
  t.equal(custom.pools[0].maximumSchedulableMemoryRequestMib, Math.floor((16384 * 0.75) / 1.4));
  const r = effectiveConfig(undefined, { executor: { cores: 12 } }, custom, noTemplates);
  t.ok(r.ok);
  // 16 cores x 0.85 = 13.6 -> 13600m x 12/16 = 10200m; memory 65536 x .75 / 1.4 = 35108 x 12/16 = 26331
  if (r.ok) t.match(r.config.executor, { coreRequest: '10200m', memory: '26331m' });
  const d = effectiveConfig(undefined, {}, custom, noTemplates);
  // default driver: 1 of 4 cores of 3400m = 850m - 140m reserve
  if (d.ok) t.match(d.config.driver, { cores: 1, coreRequest: '710m', memory: `${Math.floor(8777 / 4)}m` });
  const reserveOff = buildRules({ nodePools: example.nodePools, sizing: { defaultDriverCoreRequestReserveMillicores: 0 } });
  const full = effectiveConfig(undefined, {}, reserveOff, noTemplates);
  if (full.ok) t.equal(full.config.driver?.coreRequest, '850m', 'the reserve is configurable');
});

t.test('sizing is independent of defaults order', async (t) => {
  const sized = sizeApplication(applyDefaults({}, rules), rules);
  t.ok(sized.ok);
});
