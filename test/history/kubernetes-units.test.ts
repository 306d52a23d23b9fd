// Kubernetes mode's history, its pure parts: event logs to object storage with credentials
// from a Secret (names only in the config), the log archive's finalizer, the node-pool file's
// history section, s3a:// addresses.
import t from 'tap';
import { parseS3Url } from '../../cluster/history/object-store.js';
import { isLogContainer } from '../../cluster/kubernetes/log-archive.js';
import { eventLogRules, logArchiveDir } from '../../cli/rules.js';
import { applyDefaults, buildRules, eventLogEnv, executorPodRefusal, LOG_ARCHIVE_FINALIZER, renderDriverPod, renderExecutorPod } from '../../domain/index.js';

const pools = [{ cloudProvider: 'gce' as const, instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false }];
const s3 = { endpoint: 'http://minio.storage.svc:9000', pathStyleAccess: true, credentialsSecret: 'spark-history-s3' };

t.test('event logs in object storage: S3A settings and the Secret by name, overridable', async (t) => {
  const rules = buildRules({ nodePools: pools, eventLog: { dir: 's3a://logs/spark-events', s3 } });
  const conf = applyDefaults({}, rules).engineConf!;
  t.equal(conf['spark.eventLog.dir'], 's3a://logs/spark-events');
  t.equal(conf['spark.hadoop.fs.s3a.endpoint'], s3.endpoint);
  t.equal(conf['spark.hadoop.fs.s3a.path.style.access'], 'true');
  t.notOk(Object.keys(conf).some((key) => key.startsWith('spark.kubernetes.executor.secretKeyRef.')), 'executors get no object-store key: only the driver writes the event log');
  t.same(eventLogEnv(rules.eventLog, conf, 'pi-1'), [
    { name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: 'spark-history-s3', key: 'AWS_ACCESS_KEY_ID' } } },
    { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 'spark-history-s3', key: 'AWS_SECRET_ACCESS_KEY' } } },
  ], 'the driver gets them as secretKeyRef variables');
  const off = applyDefaults({ engineConf: { 'spark.eventLog.enabled': 'false' } }, rules).engineConf!;
  t.same(eventLogEnv(rules.eventLog, off, 'pi-1'), [], 'a run without an event log gets no credentials');
  const own = applyDefaults({ engineConf: { 'spark.eventLog.dir': 's3a://team/logs' } }, rules).engineConf!;
  t.equal(own['spark.eventLog.dir'], 's3a://team/logs', 'a submission or template may override the directory');
});

t.test('the driver pod carries the log archive finalizer only when logs are archived', async (t) => {
  const id = { appName: 'pi-1', jobName: 'pi', namespace: 'spark-apps' };
  const pod = { metadata: { name: 'pi-1', finalizers: ['team/keep'] }, spec: { containers: [{ name: 'spark-kubernetes-driver' }] } };
  const archived = buildRules({ nodePools: pools, archiveLogs: true, eventLog: { dir: 's3a://logs/spark-events', s3 } });
  const config = applyDefaults({ type: 'Python', mainApplicationFile: 'local:///x.py' }, archived);
  const rendered = renderDriverPod(pod, config, id, archived);
  t.same(rendered.metadata?.finalizers, ['team/keep', LOG_ARCHIVE_FINALIZER], "the team's own finalizers are kept");
  t.same(renderDriverPod(rendered, config, id, archived).metadata?.finalizers, ['team/keep', LOG_ARCHIVE_FINALIZER], 'added once');
  const env = rendered.spec!.containers[0]!.env!;
  t.ok(env.every((e) => !e.name.startsWith('AWS_') || (e.value === undefined && e.valueFrom?.secretKeyRef)), 'no credential value in the pod');
  const plain = buildRules({ nodePools: pools });
  t.same(renderDriverPod(pod, applyDefaults({}, plain), id, plain).metadata?.finalizers, ['team/keep'], 'no archive, no finalizer');
});

t.test('executor pods carry the log archive finalizer too, only when logs are archived', async (t) => {
  const pod = { metadata: { name: 'pi-1-exec-1', labels: { 'spark-role': 'executor' } }, spec: { containers: [{ name: 'spark-kubernetes-executor' }] } };
  const archived = buildRules({ nodePools: pools, archiveLogs: true, eventLog: { dir: 's3a://logs/spark-events', s3 } });
  const config = applyDefaults({ type: 'Python', mainApplicationFile: 'local:///x.py' }, archived);
  const rendered = renderExecutorPod(pod, config, archived);
  t.same(rendered.metadata?.finalizers, [LOG_ARCHIVE_FINALIZER]);
  t.same(renderExecutorPod(rendered, config, archived).metadata?.finalizers, [LOG_ARCHIVE_FINALIZER], 'added once');
  const plain = buildRules({ nodePools: pools });
  t.equal(renderExecutorPod(pod, applyDefaults({}, plain), plain).metadata?.finalizers, undefined, 'no archive, no finalizer');
});

t.test("the node-pool file's history section", async (t) => {
  t.equal(eventLogRules(undefined), undefined);
  t.equal(eventLogRules({ enabled: false, eventLogDir: 's3a://b/e' }), undefined, 'off');
  t.same(eventLogRules({ eventLogDir: 's3a://b/e', s3Endpoint: 'http://x:9000', credentialsSecret: 's' }),
    { dir: 's3a://b/e', s3: { endpoint: 'http://x:9000', pathStyleAccess: undefined, credentialsSecret: 's' } });
  t.equal(logArchiveDir({ eventLogDir: 's3a://bucket/spark-events' }), 's3a://bucket/spark-logs', 'beside the event logs by default');
  t.equal(logArchiveDir({ eventLogDir: 's3a://bucket/e', logArchiveDir: 's3a://other/logs' }), 's3a://other/logs');
  t.equal(logArchiveDir({ eventLogDir: 'file:///data/events' }), undefined, 'no archive without object storage');
});

t.test('s3a:// addresses and log names', async (t) => {
  t.same(parseS3Url('s3a://my-bucket/spark-events/'), { bucket: 'my-bucket', prefix: 'spark-events' });
  t.same(parseS3Url('s3://b12/a/b'), { bucket: 'b12', prefix: 'a/b' });
  t.same(parseS3Url('s3a://bucket'), { bucket: 'bucket', prefix: '' });
  t.equal(parseS3Url('file:///tmp'), undefined);
  t.equal(parseS3Url('s3a://UPPER/x'), undefined, 'not a bucket name');
  t.ok(isLogContainer('driver') && isLogContainer('executor-1') && isLogContainer('executor-42'));
  t.notOk(isLogContainer('executor-0') || isLogContainer('executor-1/../x') || isLogContainer('sidecar'));
});

t.test('an executor pod that names the event log\'s Secret is refused: only the driver holds the key', async (t) => {
  const rules = buildRules({ nodePools: pools, eventLog: { dir: 's3a://logs/spark-events', s3 } });
  const config = applyDefaults({ type: 'Python', mainApplicationFile: 'local:///x.py' }, rules);
  const executor = (env: { name: string; valueFrom: { secretKeyRef: { name: string; key: string } } }[]) =>
    ({ metadata: { name: 'pi-1-exec-1' }, spec: { containers: [{ name: 'spark-kubernetes-executor', env }] } });
  const withKey = executor([{ name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 'spark-history-s3', key: 'AWS_SECRET_ACCESS_KEY' } } }]);
  t.match(executorPodRefusal(withKey, config, rules), /secret "spark-history-s3"/);
  t.equal(executorPodRefusal(executor([]), config, rules), undefined, 'the executor as Spark now writes it is admitted');
});
