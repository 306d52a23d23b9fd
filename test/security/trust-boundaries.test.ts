// Trust boundaries (docs/security.md): a user key acts on its own applications only; local
// mode refuses launcher environment variables and its exit-code wrapper ignores the driver's
// PATH; service accounts and secrets in overrides come from the policy's allowlists, and the
// webhook applies the API's schema and the same policy to the overrides annotation; a config's
// annotations cannot set the service's own (the submitter's key id).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startProcess } from '../../cluster/local/process-runner.js';
import { admitPod, bareDriverPod, buildRules } from '../../domain/index.js';
import { reviewAdmission } from '../../webhook/server/review.js';
import { exampleCluster, startTestApi } from '../helpers/api.js';
import { fakeJob, writeFakeSparkSubmit } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

async function withKeys(t: { teardown(fn: () => unknown): void }, policy?: Record<string, unknown>) {
  const keys = new FileKeyStore(tempDir(t));
  const alice = keys.create('user', 'alice');
  const bob = keys.create('user', 'bob');
  const admin = keys.create('admin', 'platform');
  const api = await startTestApi(t, { auth: { enabled: true, store: keys }, policy, cores: 4 });
  const as = (key: { key: string }) => (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    api.call(method, url, body, { 'x-api-key': key.key });
  const state = async (name: string) => (await as(admin)('GET', `/api/apps/${name}`)).json as { state: string };
  return { api, alice: as(alice), bob: as(bob), admin: as(admin), ids: { alice: alice.id }, state };
}

t.test('a user stops, deletes and reads the log of its own applications only; admins all', async (t) => {
  const { alice, bob, admin, ids, state } = await withKeys(t);
  const created = await alice('POST', '/api/apps/', { jobName: 'mine', configOverrides: fakeJob({ sleep: 30 }) });
  t.equal(created.status, 201);
  const name = created.json.appName as string;
  t.equal(created.json.submittedBy, ids.alice);
  await waitForState(() => state(name), 'RUNNING');

  t.equal((await bob('GET', `/api/apps/${name}`)).status, 200, 'reading the record is open to every user');
  for (const [method, url] of [['POST', `/api/apps/${name}/stop`], ['DELETE', `/api/apps/${name}`], ['GET', `/api/apps/${name}/log`]] as const) {
    const res = await bob(method, url);
    t.equal(res.status, 403, `${method} ${url} by another user`);
    t.match(res.json, { statusCode: 403, message: /only the applications it submitted/ });
  }
  t.equal((await state(name)).state, 'RUNNING', 'still running after the refused stop');
  t.equal((await bob('POST', '/api/apps/no-such-app-20260101-000000-aaaaa/stop')).status, 404, 'absent is 404, not 403');
  t.equal((await alice('GET', `/api/apps/${name}/log`)).status, 200, 'the owner reads the log');
  t.equal((await alice('POST', `/api/apps/${name}/stop`)).json.state, 'KILLED', 'the owner stops it');
  t.equal((await bob('DELETE', `/api/apps/${name}`)).status, 403);
  t.equal((await admin('DELETE', `/api/apps/${name}`)).status, 204, 'an admin deletes any application');
});

t.test('the policy may let users act on every application', async (t) => {
  const { alice, bob } = await withKeys(t, { usersActOnAllApplications: true });
  const name = (await alice('POST', '/api/apps/', { jobName: 'shared', configOverrides: fakeJob({ sleep: 30 }) })).json.appName;
  t.equal((await bob('POST', `/api/apps/${name}/stop`)).json.state, 'KILLED');
});

t.test('local mode refuses environment variables that change how a shell, loader or interpreter starts', async (t) => {
  const root = tempDir(t);
  const api = await startTestApi(t);
  const marker = join(root, 'pwned');
  const payload = join(root, 'payload.sh');
  writeFileSync(payload, `touch ${marker}\n`);
  const cases: [object, string][] = [
    [{ driver: { env: { BASH_ENV: payload } } }, 'configOverrides.driver.env.BASH_ENV'],
    [{ driver: { env: { ENV: payload } } }, 'configOverrides.driver.env.ENV'],
    [{ driver: { env: { PATH: root } } }, 'configOverrides.driver.env.PATH'],
    [{ executor: { env: { LD_PRELOAD: join(root, 'x.so') } } }, 'configOverrides.executor.env.LD_PRELOAD'],
    [{ driver: { env: { ld_library_path: root } } }, 'configOverrides.driver.env.ld_library_path'],
    [{ driver: { env: { PYTHONSTARTUP: payload } } }, 'configOverrides.driver.env.PYTHONSTARTUP'],
    [{ driver: { env: { SPARK_CONF_DIR: root } } }, 'configOverrides.driver.env.SPARK_CONF_DIR'],
    [{ engineConf: { 'spark.executorEnv.BASH_ENV': payload } }, 'configOverrides.engineConf.spark.executorEnv.BASH_ENV'],
    [{ engineConf: { 'spark.kubernetes.driverEnv.LD_PRELOAD': payload } }, 'configOverrides.engineConf.spark.kubernetes.driverEnv.LD_PRELOAD'],
  ];
  for (const [overrides, field] of cases) {
    for (const dryRun of [false, true]) {
      const res = await api.call('POST', `/api/apps/${dryRun ? '?dryRun=true' : ''}`, { jobName: 'env', configOverrides: { ...fakeJob(), ...overrides } });
      t.equal(res.status, 400, `${field}${dryRun ? ' (dry run)' : ''}`);
      t.equal(res.json?.field, field);
      t.match(res.json?.message, field);
    }
  }
  const fine = await api.call('POST', '/api/apps/', { jobName: 'env', configOverrides: { ...fakeJob(), driver: { env: { MY_SETTING: 'x' } } } });
  t.equal(fine.status, 201, 'ordinary variables are accepted');
  await waitForState(() => api.getApp(fine.json.appName), 'COMPLETED');
  t.notOk(existsSync(marker), 'nothing ran the payload');
});

t.test("the exit-code wrapper records the exit code whatever the driver's PATH", async (t) => {
  const root = tempDir(t);
  const exitFile = join(root, 'driver.exit');
  const started = startProcess({ command: writeFakeSparkSubmit(root), args: ['exit=3'], env: { PATH: join(root, 'nowhere') } }, join(root, 'driver.log'), exitFile);
  t.ok(started.pid > 0);
  // (Not `started.exited`: the child is unref'd, so only a timer keeps this test process waiting.)
  await until(() => existsSync(exitFile), { what: 'the exit file', timeoutMs: 5000 }).catch(() => undefined);
  t.equal(existsSync(exitFile) ? readFileSync(exitFile, 'utf8') : 'missing', '3', 'exit code 3 recorded (FAILED, not UNKNOWN)');
});

t.test('service accounts and secrets in overrides come from the allowlist; templates may name others', async (t) => {
  const api = await startTestApi(t, { policy: { serviceAccounts: ['spark-analytics'], secrets: ['gcs'] } });
  const submit = (configOverrides: object, configTemplateName?: string) =>
    api.call('POST', '/api/apps/?dryRun=true', { jobName: 'sa', configTemplateName, configOverrides: { ...fakeJob(), ...configOverrides } });
  t.equal((await submit({ driver: { serviceAccount: 'spark-driver' } })).status, 200, 'the default service account');
  t.equal((await submit({ driver: { serviceAccount: 'spark-analytics' } })).status, 200, 'an allowed one');
  const sa = await submit({ executor: { serviceAccount: 'cluster-admin' } });
  t.equal(sa.status, 400);
  t.equal(sa.json.field, 'configOverrides.executor.serviceAccount');
  t.match(sa.json.message, /"cluster-admin" is not allowed/);
  t.equal((await submit({ driver: { secrets: [{ name: 'gcs', path: '/mnt/gcs' }] } })).status, 200, 'an allowed secret');
  const secret = await submit({ executor: { secrets: [{ name: 'gcs', path: '/mnt/gcs' }, { name: 'db-root-password', path: '/mnt/db' }] } });
  t.equal(secret.status, 400);
  t.equal(secret.json.field, 'configOverrides.executor.secrets.1.name');
  // An admin's template may name what overrides may not.
  const template = await api.call('POST', '/api/config-templates/', { name: 'privileged', config: { driver: { serviceAccount: 'etl-writer', secrets: [{ name: 'db-root-password', path: '/mnt/db' }] } } });
  t.equal(template.status, 201);
  const viaTemplate = await submit({}, 'privileged');
  t.equal(viaTemplate.status, 200);
  t.equal(viaTemplate.json.config.driver.serviceAccount, 'etl-writer');
});

t.test('engineConf may set only the spark.kubernetes.* keys of the allowlist (issue #17)', async (t) => {
  const api = await startTestApi(t, { policy: { secrets: ['gcs'], serviceAccounts: ['spark-analytics'] } });
  for (const key of [
    'spark.kubernetes.executor.secrets.gcs',
    'spark.kubernetes.authenticate.executor.serviceAccountName',
    'spark.kubernetes.executor.volumes.hostPath.root.options.path',
    'spark.kubernetes.executor.podTemplateFile',
    'spark.kubernetes.namespace',
    'spark.kubernetes.container.image',
  ]) {
    for (const dryRun of [false, true]) {
      const res = await api.call('POST', `/api/apps/${dryRun ? '?dryRun=true' : ''}`, { jobName: 'k8s', configOverrides: { ...fakeJob(), engineConf: { [key]: 'x' } } });
      t.equal(res.status, 400, `${key}${dryRun ? ' (dry run)' : ''}`);
      t.equal(res.json?.field, `configOverrides.engineConf.${key}`);
    }
  }
  const tuning = await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'k8s', configOverrides: { ...fakeJob(), engineConf: { 'spark.kubernetes.allocation.batch.size': '10', 'spark.sql.shuffle.partitions': '8' } } });
  t.equal(tuning.status, 200, 'allocation tuning and other Spark keys pass');
});

t.test('the webhook applies the API schema and the policy to the overrides annotation: 400, never 500', async (t) => {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
  const admit = (pod: Parameters<typeof admitPod>[0]) => admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => `${j}-x` });
  const review = (overrides: string) => {
    const pod = bareDriverPod({ appName: 'app-20260101-000000-aaaaa', jobName: 'app', namespace: 'spark-apps', configOverrides: {} });
    pod.metadata!.annotations!['submission-service/config-overrides'] = overrides;
    const body = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u1', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE', namespace: 'spark-apps', object: pod } };
    return reviewAdmission(body, admit);
  };
  const cases: [string, RegExp][] = [
    [JSON.stringify({ executor: { cores: -2 } }), /configOverrides\.executor\.cores/],
    [JSON.stringify({ driver: { coreRequest: '-1' } }), /configOverrides\.driver\.coreRequest/],
    [JSON.stringify({ arguments: 'abc' }), /configOverrides\.arguments/],
    [JSON.stringify({ driver: { secrets: [{ path: '/mnt/x' }] } }), /configOverrides\.driver\.secrets\.0\.name/],
    [JSON.stringify({ driver: { secrets: [{ name: 'db-root-password', path: '/mnt/x' }] } }), /secret "db-root-password" is not allowed/],
    [JSON.stringify({ driver: { serviceAccount: 'cluster-admin' } }), /service account "cluster-admin" is not allowed/],
    [JSON.stringify({ nonsense: true }), /configOverrides\.nonsense" is not allowed/],
    [JSON.stringify({ engineConf: { 'spark.kubernetes.executor.volumes.hostPath.root.options.path': '/' } }), /spark\.kubernetes\.executor\.volumes\.hostPath\.root\.options\.path is not allowed/],
  ];
  for (const [overrides, message] of cases) {
    const result = review(overrides);
    t.equal(result.outcome, 'refused', overrides);
    t.equal(result.review.response.allowed, false);
    t.equal(result.review.response.status?.code, 400, `${overrides}: 400`);
    // The refusal body travels as JSON in the status message (refusal.ts reads it back).
    const body = JSON.parse(result.review.response.status?.message ?? '{}') as { message: string; field?: string };
    t.match(body.message, message);
  }
  t.equal(review(JSON.stringify({ executor: { cores: 2 } })).outcome, 'admitted', 'valid overrides are admitted');
});

t.test("the policy comes from the node-pool file's policy section, checked by its schema", async (t) => {
  const { rulesFrom } = await import('../../cli/rules.js');
  const dir = tempDir(t);
  const file = join(dir, 'pools.json');
  const pools = exampleCluster().nodePools;
  writeFileSync(file, JSON.stringify({ nodePools: pools, policy: { serviceAccounts: ['etl'], secrets: ['gcs'], usersActOnAllApplications: true } }));
  t.match(rulesFrom(file, 'local').policy, { serviceAccounts: ['etl'], secrets: ['gcs'], usersActOnAllApplications: true, refuseLauncherEnvironment: false });
  writeFileSync(file, JSON.stringify({ nodePools: pools, policy: { secret: ['gcs'] } }));
  t.throws(() => rulesFrom(file, 'local'), /policy|secret/, 'a misspelt key is refused, not ignored');
});

t.test('a config\'s driver annotations cannot set the service\'s own: the submitter\'s key id comes from the submission', async (t) => {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
  const pod = bareDriverPod({
    appName: 'app-20260101-000000-aaaaa', jobName: 'app', namespace: 'spark-apps', submittedBy: 'mallory',
    configOverrides: { driver: { annotations: { 'submission-service/submitted-by': 'alice', 'submission-service/idempotency': 'forged', 'team': 'x' } } },
  });
  const admitted = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => `${j}-x` });
  t.equal(admitted.outcome, 'admitted');
  if (admitted.outcome !== 'admitted') return;
  const annotations = admitted.pod.metadata!.annotations!;
  t.equal(annotations['submission-service/submitted-by'], 'mallory', 'the driver pod names the key that submitted it, not the one an override names');
  t.notOk('submission-service/idempotency' in annotations, 'nor an idempotency mark the submission did not make');
  t.equal(annotations.team, 'x', 'other annotations pass');
});
