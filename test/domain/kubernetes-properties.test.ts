// The spark.kubernetes.* allowlist of a submission's engineConf and the executor pod guard:
// pure functions of domain, so the API, local mode and the webhook refuse alike.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import {
  ALLOWED_KUBERNETES_PROPERTIES, admitPod, buildPolicy, buildRules, checkOverrides, executorPodRefusal, kubernetesPropertyAllowed, podSecretNames,
} from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';

t.test('keys that change a pod\'s identity, mounts, image, placement or size are closed to submissions', async (t) => {
  for (const key of [
    'spark.kubernetes.executor.secrets.db-root-password',
    'spark.kubernetes.driver.secrets.db',
    'spark.kubernetes.executor.secretKeyRef.PASSWORD',
    'spark.kubernetes.authenticate.executor.serviceAccountName',
    'spark.kubernetes.authenticate.driver.serviceAccountName',
    'spark.kubernetes.authenticate.submission.oauthToken',
    'spark.kubernetes.executor.volumes.hostPath.root.mount.path',
    'spark.kubernetes.executor.volumes.hostPath.root.options.path',
    'spark.kubernetes.executor.volumes.persistentVolumeClaim.data.options.claimName',
    'spark.kubernetes.executor.podTemplateFile',
    'spark.kubernetes.driver.podTemplateFile',
    'spark.kubernetes.namespace',
    'spark.kubernetes.container.image',
    'spark.kubernetes.executor.container.image',
    'spark.kubernetes.container.image.pullSecrets',
    'spark.kubernetes.executor.podNamePrefix',
    'spark.kubernetes.executor.label.submission-service/app-name',
    'spark.kubernetes.executor.annotation.x',
    'spark.kubernetes.node.selector.pool',
    'spark.kubernetes.executor.node.selector.pool',
    'spark.kubernetes.executor.request.cores',
    'spark.kubernetes.executor.limit.cores',
    'spark.kubernetes.memoryOverheadFactor',
    'spark.kubernetes.executor.scheduler.name',
    'spark.kubernetes.executor.pod.featureSteps',
    'spark.kubernetes.allocation.pods.allocator',
    'spark.kubernetes.local.dirs.tmpfs',
    'spark.kubernetes.file.upload.path',
    'spark.kubernetes.trust.certificates',
  ]) t.notOk(kubernetesPropertyAllowed(key), key);
});

t.test('tuning keys, the driver environment and keys outside spark.kubernetes.* stay open', async (t) => {
  for (const key of [...ALLOWED_KUBERNETES_PROPERTIES, 'spark.kubernetes.driverEnv.MY_SETTING', 'spark.sql.shuffle.partitions', 'spark.executor.memory']) {
    t.ok(kubernetesPropertyAllowed(key), key);
  }
});

t.test('the policy may open more keys, one by one or a family with .*', async (t) => {
  const extra = ['spark.kubernetes.executor.podNamePrefix', 'spark.kubernetes.executor.annotation.*'];
  t.ok(kubernetesPropertyAllowed('spark.kubernetes.executor.podNamePrefix', extra));
  t.ok(kubernetesPropertyAllowed('spark.kubernetes.executor.annotation.team', extra));
  t.notOk(kubernetesPropertyAllowed('spark.kubernetes.executor.annotationx', extra), 'a family is below its dot only');
  t.notOk(kubernetesPropertyAllowed('spark.kubernetes.executor.secrets.x', extra));
});

t.test('checkOverrides names the engineConf key it refuses', async (t) => {
  const refusal = checkOverrides({ engineConf: { 'spark.sql.shuffle.partitions': '8', 'spark.kubernetes.executor.secrets.db': '/mnt/db' } }, buildPolicy({}), 'spark-driver');
  t.equal(refusal?.field, 'configOverrides.engineConf.spark.kubernetes.executor.secrets.db');
  t.match(refusal?.message, /Spark property spark\.kubernetes\.executor\.secrets\.db is not allowed/);
  t.equal(checkOverrides({ engineConf: { 'spark.kubernetes.executor.podNamePrefix': 'x' } }, buildPolicy({ kubernetesProperties: ['spark.kubernetes.executor.podNamePrefix'] }), 'spark-driver'), undefined);
});

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps', policy: { serviceAccounts: ['spark-analytics'], secrets: ['gcs'] } });
const executor = (spec: Partial<V1Pod['spec']>): V1Pod => ({
  metadata: { name: 'app-exec-1' },
  spec: { containers: [{ name: 'spark-kubernetes-executor', image: 'apache/spark:3.5.7' }], serviceAccountName: 'spark-driver', ...spec },
});

t.test('executor pods: hostPath, a foreign service account or Secret are refused; the application\'s own pass', async (t) => {
  const config: ApplicationConfig = { driver: { serviceAccount: 'etl-writer' }, executor: { secrets: [{ name: 'db', path: '/mnt/db' }] } };
  t.equal(executorPodRefusal(executor({ serviceAccountName: 'etl-writer', volumes: [{ name: 'db', secret: { secretName: 'db' } }, { name: 'spark-local-dir-1', emptyDir: {} }] }), config, rules), undefined);
  t.match(executorPodRefusal(executor({ serviceAccountName: 'etl-writer', volumes: [{ name: 'root', hostPath: { path: '/' } }] }), config, rules), /volume "root" is a hostPath/);
  t.match(executorPodRefusal(executor({ serviceAccountName: 'cluster-admin' }), config, rules), /service account "cluster-admin" is not its application's/);
  t.match(executorPodRefusal(executor({ serviceAccountName: 'etl-writer', volumes: [{ name: 's', secret: { secretName: 'db-root-password' } }] }), config, rules), /secret "db-root-password"/);
  const viaEnv = executor({
    serviceAccountName: 'etl-writer',
    containers: [{ name: 'c', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'db-root-password', key: 'p' } } }], envFrom: [{ secretRef: { name: 'api-token' } }] }],
    volumes: [{ name: 'p', projected: { sources: [{ secret: { name: 'tls' } }, { serviceAccountToken: { path: 'token' } }] } }],
  });
  t.same(podSecretNames(viaEnv).sort(), ['api-token', 'db-root-password', 'tls']);
  t.match(executorPodRefusal(viaEnv, config, rules), /secret "(db-root-password|api-token|tls)"/);
  t.equal(executorPodRefusal(executor({ serviceAccountName: undefined }), {}, rules), undefined, 'no account named: the namespace default');
});

t.test('an executor of a driver the service does not know gets the policy\'s allowances only', async (t) => {
  t.equal(executorPodRefusal(executor({ serviceAccountName: 'spark-analytics', volumes: [{ name: 'g', secret: { secretName: 'gcs' } }] }), undefined, rules), undefined);
  t.match(executorPodRefusal(executor({ serviceAccountName: 'etl-writer' }), undefined, rules), /service account "etl-writer"/);
  t.match(executorPodRefusal(executor({ volumes: [{ name: 'd', hostPath: { path: '/var/run/docker.sock' } }] }), undefined, rules), /hostPath/);
});

t.test('an executor may not read the event log\'s object-storage credentials: only the driver writes the event log', async (t) => {
  const withS3 = buildRules({
    nodePools: exampleCluster().nodePools, namespace: 'spark-apps',
    eventLog: { dir: 's3a://spark-history/spark-events', s3: { endpoint: 'http://s3:9000', credentialsSecret: 'spark-history-s3' } },
  });
  const credentials = executor({ containers: [{ name: 'c', env: [{ name: 'AWS_ACCESS_KEY_ID', valueFrom: { secretKeyRef: { name: 'spark-history-s3', key: 'AWS_ACCESS_KEY_ID' } } }] }] });
  t.match(executorPodRefusal(credentials, {}, withS3), /secret "spark-history-s3"/, 'the credentials Secret the rules name is refused');
  t.match(executorPodRefusal(credentials, {}, rules), /secret "spark-history-s3"/, 'and without event logs in object storage too');
  const other = executor({ containers: [{ name: 'c', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'db-root-password', key: 'p' } } }] }] });
  t.match(executorPodRefusal(other, {}, withS3), /secret "db-root-password"/, 'any other Secret still refused');
});

t.test('an executor labelled as another application\'s than its owner driver\'s is refused (its NetworkPolicy would take it for that run\'s)', async (t) => {
  const known: Record<string, ApplicationConfig> = { 'etl-a': {}, 'etl-b': {} };
  const context = { rules, templates: () => undefined, applications: (name: string) => known[name], newAppName: (job: string) => job };
  const labelled = (app: string, owner: string): V1Pod => ({
    ...executor({}),
    metadata: { name: `${owner}-exec-9`, labels: { 'spark-role': 'executor', 'submission-service/app-name': app }, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner, uid: 'u' }] },
  });
  const forged = admitPod(labelled('etl-b', 'etl-a'), context);
  t.equal(forged.outcome, 'refused');
  t.match(forged.outcome === 'refused' ? forged.body.message : '', /labelled as application etl-b's but owned by pod etl-a/);
  t.equal(admitPod(labelled('etl-a', 'etl-a'), context).outcome, 'admitted', 'its own application\'s label passes');
  t.equal(admitPod(labelled('etl-b', 'etl-a-exec-1'), context).outcome, 'refused', 'nor may a pod owned by an executor pass for another run');
});

t.test('a retry\'s executors (their driver pod is <app>-attempt-2) are their application\'s, by the driver pod\'s app label, not its name', async (t) => {
  const drivers: Record<string, { app: string; config: ApplicationConfig }> = { 'etl-a-attempt-2': { app: 'etl-a', config: {} }, 'etl-b': { app: 'etl-b', config: {} } };
  const context = {
    rules, templates: () => undefined, newAppName: (job: string) => job,
    applications: (name: string) => drivers[name]?.config, driverApplication: (name: string) => drivers[name]?.app,
  };
  const labelled = (app: string, owner: string): V1Pod => ({
    ...executor({}),
    metadata: { name: `${owner}-exec-1`, labels: { 'spark-role': 'executor', 'submission-service/app-name': app }, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: owner, uid: 'u' }] },
  });
  t.equal(admitPod(labelled('etl-a', 'etl-a-attempt-2'), context).outcome, 'admitted', 'attempt 2\'s executor, labelled as its application\'s');
  const forged = admitPod(labelled('etl-b', 'etl-a-attempt-2'), context);
  t.match(forged.outcome === 'refused' ? forged.body.message : '', /labelled as application etl-b's but owned by pod etl-a-attempt-2 \(application etl-a\)/, 'another run\'s label is still refused');
  t.equal(admitPod(labelled('etl-a-attempt-2', 'etl-a-attempt-2'), context).outcome, 'refused', 'and the pod\'s own name is not its application when its label says otherwise');
});
