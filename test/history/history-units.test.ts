// The history's pure parts: event log defaults and the run's mark, which UI a link opens, which
// paths of the History Server an application's link reaches, whose a log is, retention.
import t from 'tap';
import { expired, parseRetention } from '../../cluster/history/retention.js';
import { identityFromLines, sparkAppIdOfEntry } from '../../cluster/history/event-log-head.js';
import { historyPath, isRunList } from '../../dashboard/history-paths.js';
import { APP_NAME_PROPERTY, applyDefaults, kubernetesPropertyAllowed, buildRules, sparkProperties, sparkUiView } from '../../domain/index.js';

const pools = [{ cloudProvider: 'gce' as const, instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false }];

t.test('admission turns rolling event logs on, and a submission may override each key', async (t) => {
  const rules = buildRules({ nodePools: pools, eventLog: { dir: 'file:///data/spark-events' } });
  const c = applyDefaults({ engineVersion: '3.5.7' }, rules);
  t.equal(c.engineConf?.['spark.eventLog.enabled'], 'true');
  t.equal(c.engineConf?.['spark.eventLog.dir'], 'file:///data/spark-events');
  t.equal(c.engineConf?.['spark.eventLog.rolling.enabled'], 'true');
  t.equal(c.engineConf?.['spark.eventLog.rolling.maxFileSize'], '128m');
  t.equal(c.engineConf?.['spark.eventLog.compress'], 'false', 'plain logs for every version: Spark 4 compresses them by default, and the index reads their heads as lines');
  const off = applyDefaults({ engineConf: { 'spark.eventLog.enabled': 'false' } }, rules);
  t.equal(off.engineConf?.['spark.eventLog.enabled'], 'false', 'the submission wins');
  t.notOk(applyDefaults({}, buildRules({ nodePools: pools })).engineConf?.['spark.eventLog.enabled'], 'no event logs without a directory');
});

t.test("the run's mark names its application, and a submission may not set it", async (t) => {
  const rules = buildRules({ nodePools: pools });
  const config = applyDefaults({}, rules);
  const props = sparkProperties(config, { appName: 'mine-1', jobName: 'mine', namespace: 'ns' }, rules);
  t.equal(props[APP_NAME_PROPERTY], 'mine-1');
  t.notOk(kubernetesPropertyAllowed(APP_NAME_PROPERTY), 'the policy refuses it in engineConf');
});

t.test('which Spark UI the link opens', async (t) => {
  const history = { available: true, retentionMs: 86_400_000 };
  t.same(sparkUiView({ appName: 'a', state: 'RUNNING', endedAt: null }, history), { state: 'live', url: '/dashboard/apps/a/spark-ui/', expiresAt: null });
  t.same(sparkUiView({ appName: 'a', state: 'COMPLETED', endedAt: '2026-01-01T00:00:00.000Z' }, history),
    { state: 'history', url: '/dashboard/apps/a/spark-ui/', expiresAt: '2026-01-02T00:00:00.000Z' });
  t.same(sparkUiView({ appName: 'a', state: 'FAILED', endedAt: '2026-01-01T00:00:00.000Z' }, { available: true, retentionMs: undefined }).expiresAt, null, 'kept for ever');
  t.equal(sparkUiView({ appName: 'a', state: 'COMPLETED', endedAt: '2026-01-01T00:00:00.000Z' }, { available: false, retentionMs: 1 }).state, 'unavailable');
  t.equal(sparkUiView({ appName: 'a', state: 'PENDING', endedAt: null }, history).state, 'unavailable');
});

t.test("an application's link reaches its own run's pages and nothing else", async (t) => {
  const id = 'local-1795642063681';
  t.equal(historyPath('/', id), `/history/${id}/jobs/`, 'the root opens the jobs');
  t.equal(historyPath('/jobs/', id), `/history/${id}/jobs/`, "the live UI's paths reach the same pages");
  t.equal(historyPath('/stages/stage/', id), `/history/${id}/stages/stage/`);
  t.equal(historyPath(`/history/${id}/jobs/`, id), `/history/${id}/jobs/`, "the History Server's own links pass");
  t.equal(historyPath('/static/webui.css', id), '/static/webui.css');
  t.equal(historyPath(`/api/v1/applications/${id}/jobs`, id), `/api/v1/applications/${id}/jobs`);
  t.equal(historyPath('/api/v1/applications', id), undefined, 'not the list of every run');
  t.ok(isRunList('/api/v1/applications') && isRunList('/api/v1/applications/'), 'which the link answers with its own run (history-ui.ts)');
  t.notOk(isRunList(`/api/v1/applications/${id}`) || isRunList('/api/v1/applicationsx') || isRunList('/api/v1/applications/local-1/jobs'), 'only the list itself');
  t.equal(historyPath('/api/v1/applications/local-1/jobs', id), undefined, "not another run's data");
  t.equal(historyPath('/history/local-1/jobs/', id), undefined, "not another run's pages");
  t.equal(historyPath(`/history/${id}0/jobs/`, id), undefined, 'not a run whose id starts with this one');
  t.equal(historyPath(`/history/${id}/../local-1/jobs/`, id), undefined, 'no climbing out');
  t.equal(historyPath(`/history/${id}/%2e%2e/local-1/jobs/`, id), undefined, 'no encoded climbing out');
  t.equal(historyPath(`/history/${id}%2f..%2flocal-1/jobs/`, id), undefined, 'no encoded slashes');
  t.equal(historyPath('/%zz', id), undefined, 'malformed escapes');
});

t.test("whose a log is: the environment's mark and the start's id", async (t) => {
  t.equal(sparkAppIdOfEntry('eventlog_v2_local-17'), 'local-17');
  t.equal(sparkAppIdOfEntry('spark-abc.inprogress'), 'spark-abc');
  t.equal(sparkAppIdOfEntry('spark-abc.lz4'), undefined, 'compressed single files are not read');
  t.equal(sparkAppIdOfEntry('.history-index'), undefined);
  const env = JSON.stringify({ Event: 'SparkListenerEnvironmentUpdate', 'Spark Properties': { [APP_NAME_PROPERTY]: 'pi-1', 'spark.app.name': 'pi' } });
  const start = JSON.stringify({ Event: 'SparkListenerApplicationStart', 'App Name': 'pi', 'App ID': 'local-17' });
  t.same(identityFromLines([env, start]), { sparkAppId: 'local-17', appName: 'pi-1', sparkAppName: 'pi' });
  t.equal(identityFromLines([env]), undefined, 'not yet started: read again later');
  t.same(identityFromLines([JSON.stringify({ Event: 'SparkListenerEnvironmentUpdate', 'Spark Properties': {} }), start]), { sparkAppId: 'local-17', appName: undefined, sparkAppName: 'pi' }, 'a run the service did not submit');
  t.equal(identityFromLines([`${env.slice(0, 50)}`]), undefined, 'a torn line');
});

t.test('retention', async (t) => {
  t.equal(parseRetention('30d'), 30 * 86_400_000);
  t.equal(parseRetention('1m'), 60_000);
  t.equal(parseRetention('12h'), 12 * 3_600_000);
  t.equal(parseRetention('7'), 7 * 86_400_000, 'a bare number is days');
  t.equal(parseRetention('off'), undefined);
  t.equal(parseRetention('0'), undefined);
  t.throws(() => parseRetention('soon'), /--retention takes a duration/);
  const now = Date.parse('2026-01-02T00:00:00.000Z');
  t.ok(expired({ state: 'COMPLETED', endedAt: '2026-01-01T00:00:00.000Z' }, 3_600_000, now));
  t.notOk(expired({ state: 'COMPLETED', endedAt: '2026-01-01T23:30:00.000Z' }, 3_600_000, now));
  t.notOk(expired({ state: 'RUNNING', endedAt: null }, 1, now), 'running applications never expire');
});
