// Sizing from past runs in Kubernetes mode, on the test bed (real apiserver and its watches) with
// the test bed's S3 server: each ended run's event log, read from the bucket, becomes a run in
// its job's JobProfile, written by the controller's leader; the API answers the job's
// recommendation from it, and under sizing.fromHistory=apply the next run is admitted smaller,
// by the API and by the webhook alike. Drivers are not run: each pod's phases come from a stand-in
// kubelet (fakeKubelet, a TEST DOUBLE), its event log is a recorded one (a real Spark run's,
// test/fixtures/history) uploaded under the run's names, as S3A would have written it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { KubernetesSparkHistory } from '../../cluster/kubernetes/kubernetes-history.js';
import { kubeClients, GROUP, JOB_PROFILES, VERSION } from '../../cluster/kubernetes/client.js';
import { buildApi } from '../../submit-api/app.js';
import { startS3Server } from '../../testbed/s3-server.js';
import { repoRoot } from '../helpers/api.js';
import { eventually, fakeKubelet, startKubeBed } from '../helpers/kubernetes.js';
import { http } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = !process.env.SUBMISSION_SERVICE_TESTBED ? 'no test bed (scripts/setup.sh)' : !s3Binary ? 'no S3 server (test/s3/build.sh)' : false;
const PREFIX = 'spark-events';
const FIXTURE_ID = 'local-1795819889599';
const FIXTURE_APP = 'nightly-20261127-225900-abcde';
const fixture = readFileSync(join(repoRoot, 'test', 'fixtures', 'history', 'event-logs', `eventlog_v2_${FIXTURE_ID}`, `events_1_${FIXTURE_ID}`), 'utf8');
const overrides = { type: 'Python', mainApplicationFile: 'local:///app.py', executor: { cores: 4, memory: '8g', instances: 1 }, sizing: { fromHistory: 'apply' } };

t.test('Kubernetes mode: ended runs become the job\'s JobProfile; recommendation and apply from it', { skip, timeout: 600_000 }, async (t) => {
  const dir = tempDir(t, 'subsvc-k8s-profiles-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'));
  t.teardown(() => s3.stop());
  const bed = await startKubeBed(t);
  const { namespace, rules } = bed;
  // The API as the chart runs it with history: controller, the event logs' store, the profiles' recorder.
  await bed.api.close();
  const cluster = new KubernetesCluster({ clients: kubeClients(bed.testbed.kubeconfig), namespace, rules, log: (m) => t.comment(m) });
  await cluster.start();
  await s3.store.ensureFolder(PREFIX);
  // No History Server: the profile is read from the bucket; the warm-up's requests fail, said only.
  const history = new KubernetesSparkHistory({ store: s3.store, eventLogPrefix: PREFIX, server: new URL('http://127.0.0.1:9/'), events: cluster.events, log: () => undefined });
  cluster.recordJobProfiles((appName) => history.readProfile(appName), rules);
  const api = await buildApi({ cluster, history, jobs: cluster.jobs, auth: { enabled: false, store: { verify: () => undefined } } });
  const url = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => { await api.close(); await history.close(); await cluster.close(); });
  await cluster.jobsReady();
  await eventually(async () => cluster.leader?.isLeader, Boolean, { what: 'the API to lead' });

  const submit = async () => {
    const res = await http(url, 'POST', '/api/apps/', { jobName: 'oversized', configOverrides: overrides });
    t.equal(res.status, 201, res.text);
    return res.json as { appName: string; config: { executor: { cores: number; memory: string } } };
  };
  /** One run to its end: the pod runs, its event log lands in the bucket (closed), the pod succeeds. */
  const runToEnd = async (appName: string, n: number) => {
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    const id = `spark-profile-${n}`;
    await s3.store.put(`${PREFIX}/eventlog_v2_${id}/events_1_${id}`, Buffer.from(fixture.replaceAll(FIXTURE_ID, id).replaceAll(FIXTURE_APP, appName)), 'application/octet-stream');
    await s3.store.put(`${PREFIX}/eventlog_v2_${id}/appstatus_${id}`, Buffer.alloc(0), 'application/octet-stream');
    await fakeKubelet(bed.clients, namespace, appName, 'Succeeded');
  };
  const profileObject = async () => {
    try {
      return await bed.clients.custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: JOB_PROFILES, name: 'oversized' }) as { spec: { runs: { appName: string; profile: { sparkAppId: string } | null }[] } };
    } catch { return undefined; }
  };

  const first = [await submit(), await submit()];
  for (const [i, run] of first.entries()) {
    t.equal(run.config.executor.cores, 4, 'no history yet: as asked');
    await runToEnd(run.appName, i + 1);
  }
  const stored = await eventually(profileObject, (p) => (p?.spec.runs.length ?? 0) >= 2, { what: 'both runs in the JobProfile', timeoutMs: 120_000 });
  t.same(stored!.spec.runs.map((r) => r.appName), first.map((r) => r.appName), 'the JobProfile holds both runs, oldest first');
  t.same(stored!.spec.runs.map((r) => r.profile?.sparkAppId), ['spark-profile-1', 'spark-profile-2'], 'each with the profile of its own event log');
  const app = await eventually(() => http(url, 'GET', `/api/apps/${first[0].appName}`), (r) => r.json.cost !== undefined, { what: 'the run\'s cost in the API' });
  t.ok(app.json.cost.usedCoreHours !== null, 'the run\'s cost, used figures from its event log');

  const recommendation = await http(url, 'GET', '/api/jobs/oversized/recommendation');
  t.equal(recommendation.status, 200, recommendation.text);
  t.equal(recommendation.json.mode, 'apply');
  t.ok(recommendation.json.recommendation.suggested.cores < 4, `fewer cores suggested (${recommendation.json.recommendation.suggested.cores})`);
  t.equal(recommendation.json.runs.length, 2, 'both runs with their costs');

  // The webhook watches the same JobProfiles: it sizes the pods the API writes the same way.
  await eventually(async () => bed.webhook.cache.jobs.runs('oversized', null)?.length ?? 0, (n) => n >= 2, { what: 'the webhook to hear of both runs' });
  const next = await submit();
  t.ok(next.config.executor.cores < 4, `the next run is admitted smaller (${next.config.executor.cores} cores)`);
  const submission = await http(url, 'GET', `/api/apps/${next.appName}/submission`);
  t.match(submission.json.sizing.history, { mode: 'apply', applied: true, asked: { cores: 4, memory: '8g' } }, 'the sizing annotation on the admitted pod says so');
  const pod = await bed.clients.core.readNamespacedPod({ name: next.appName, namespace });
  t.match(JSON.stringify(pod.spec?.containers[0]?.args), new RegExp(`spark.executor.cores=${next.config.executor.cores}`), 'and the driver pod runs with that size');
});
