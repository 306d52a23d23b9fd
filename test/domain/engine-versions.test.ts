// The pure choice of a Spark version (domain/engine-versions.ts): which versions are offered,
// the default, the one refusal of any other (through effectiveConfig, which the API, dry runs,
// the webhook and local mode share), and what follows from the version (image, dynamic allocation).
import t from 'tap';
import { admitPod, applyDefaults, bareDriverPod, buildRules, effectiveConfig, engineMajor, engineVersionRefusal, renderDriverPod, resolveEngineVersions } from '../../domain/index.js';

const nodePools = [{ cloudProvider: 'gce', instanceName: 'n1-standard-4', cpu: 4, memoryMib: 15258, preemptible: false }];

t.test('offered by default: 3.5.7 (the default) and 4.2.0', async (t) => {
  const rules = buildRules({ nodePools });
  t.same(rules.engineVersions, ['3.5.7', '4.2.0']);
  t.equal(rules.defaultEngineVersion, '3.5.7', 'existing users keep their Spark');
  const chosen = buildRules({ nodePools, engineVersions: ['4.2.0'] });
  t.equal(chosen.defaultEngineVersion, '4.2.0', 'a list without 3.5.7 defaults to its first');
  t.same(resolveEngineVersions(['3.5.7', '3.5.7', '4.2.0'], '4.2.0'), { offered: ['3.5.7', '4.2.0'], defaultVersion: '4.2.0' }, 'duplicates go');
});

t.test('a default that is not offered, or a list entry that is no version, is refused at start', async (t) => {
  t.throws(() => buildRules({ nodePools, defaultEngineVersion: '3.4.1' }), /defaultEngineVersion 3\.4\.1 is not among engineVersions \(3\.5\.7, 4\.2\.0\)/);
  t.throws(() => buildRules({ nodePools, engineVersions: ['4.2'] }), /"4\.2" is not a version/);
});

t.test('an unoffered version is a 400 naming the offered ones; offered ones pass', async (t) => {
  t.equal(engineVersionRefusal('4.2.0', ['3.5.7', '4.2.0']), undefined);
  t.same(engineVersionRefusal('3.4.1', ['3.5.7', '4.2.0']), { field: 'engineVersion', message: 'engineVersion "3.4.1" is not offered here; offered: 3.5.7, 4.2.0' });
  const rules = buildRules({ nodePools });
  const context = { rules, templates: () => undefined, applications: () => undefined, newAppName: (job: string) => job };
  const pod = (configOverrides: Record<string, unknown>, configTemplateName?: string) =>
    bareDriverPod({ appName: 'v-20260101-000000-aaaaa', jobName: 'v', namespace: 'spark-apps', configTemplateName, configOverrides });
  const refused = admitPod(pod({ engineVersion: '4.3.0' }), context);
  t.same(refused, { outcome: 'refused', status: 400, body: { field: 'engineVersion', message: 'engineVersion "4.3.0" is not offered here; offered: 3.5.7, 4.2.0' } });
  const dry = admitPod(pod({ engineVersion: '3.0.0' }), { ...context, dryRun: true });
  t.equal(dry.outcome, 'admitted', 'a dry run answers what admission would make of any version (SPEC\'s dry runs name 3.0.0)');
  const fromTemplate = admitPod(pod({}, 'old'), { ...context, templates: () => ({ engineVersion: '3.4.1' }) });
  t.equal(fromTemplate.outcome, 'refused', "a template's version is checked too (templates made before the setting changed)");
  const overridden = admitPod(pod({ engineVersion: '4.2.0' }, 'old'), { ...context, templates: () => ({ engineVersion: '3.4.1' }) });
  t.equal(overridden.outcome, 'admitted', 'overrides win before the check: the version that would run is the one checked');
  const none = effectiveConfig(undefined, {}, rules, () => undefined);
  t.equal(none.ok && none.config.engineVersion, '3.5.7', 'no version: the default');
});

t.test('the version picks the image and keeps dynamic allocation for every major >= 3', async (t) => {
  const rules = buildRules({ nodePools, images: { '4.2.0': 'registry.example/spark:4.2.0-ours' } });
  const four = applyDefaults({ engineVersion: '4.2.0' }, rules);
  t.equal(four.image, 'registry.example/spark:4.2.0-ours', 'the per-version image map');
  t.equal(applyDefaults({ engineVersion: '3.5.7' }, rules).image, 'apache/spark:3.5.7', 'the pattern for a version without an entry');
  const kernel = (engineVersion?: string) => applyDefaults({ engineVersion, image: 'registry.example/kernel:{version}' }, rules).image;
  t.equal(kernel('4.2.0'), 'registry.example/kernel:4.2.0', "{version} in a given image (the gateway's kernel image) is the kernel's version");
  t.equal(kernel(undefined), 'registry.example/kernel:3.5.7', 'or the default');
  t.equal(four.engineConf?.['spark.dynamicAllocation.enabled'], 'true', '4.x: dynamic allocation on');
  t.equal(four.engineConf?.['spark.dynamicAllocation.shuffleTracking.enabled'], 'true', '4.x: shuffle tracking on');
  t.equal(applyDefaults({ engineVersion: '10.0.0' }, rules).engineConf?.['spark.dynamicAllocation.enabled'], 'true', 'a two-digit major is >= 3 too');
  t.notOk(applyDefaults({ engineVersion: '2.4.8' }, rules).engineConf?.['spark.dynamicAllocation.enabled'], '2.x: none');
  t.equal(engineMajor('4.2.0'), 4);
  t.ok(Number.isNaN(engineMajor('latest')));
  const sized = effectiveConfig(undefined, { engineVersion: '4.2.0', executor: { cores: 2 } }, rules, () => undefined);
  t.ok(sized.ok && sized.config.executor?.coreRequest && sized.config.executor.memory, '4.x executors are sized like 3.x');
});

t.test("a 4.x driver pod declares the Connect port as Spark 4's spark-submit does; 3.x pods do not", async (t) => {
  const rules = buildRules({ nodePools });
  const portsOf = (engineVersion: string) => {
    const admitted = effectiveConfig(undefined, { engineVersion, type: 'Python', mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py' }, rules, () => undefined);
    if (!admitted.ok) throw new Error('refused');
    const pod = renderDriverPod({ spec: { containers: [] } }, admitted.config, { appName: 'pi-20260101-000000-aaaaa', jobName: 'pi', namespace: 'spark-apps' }, rules);
    return (pod.spec?.containers[0]?.ports ?? []).map((p) => `${p.name}=${p.containerPort}`).sort();
  };
  t.same(portsOf('4.2.0'), ['blockmanager=7079', 'driver-rpc-port=7078', 'spark-connect=15002', 'spark-ui=4040']);
  t.same(portsOf('3.5.7'), ['blockmanager=7079', 'driver-rpc-port=7078', 'spark-ui=4040']);
});
