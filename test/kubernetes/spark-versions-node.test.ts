// Runs alone (scripts/test.sh): a real node is one per machine, and two Spark applications (a
// driver and an executor each), the S3 server and Spark's History Server share two cores.
//
// engineVersion chooses the Spark that runs on the real node (issue 24, items 1 and 5): the
// node set up as `testbed up --real-node --s3` sets it up (testbed/real-node-spark.ts: its pool,
// label and every offered version's runtime image; testbed/history-bed.ts: event logs in the
// test bed's S3 server, the newest Spark's History Server on them). A 4.2.0 and a 3.5.7 pi.py,
// submitted side by side, each run in driver and executor pods of their own version's image,
// end COMPLETED with their logs readable and naming their Spark; each event log is written to
// S3 by its driver (S3A of its own Hadoop: 3.3.4 for 3.5, 3.5.0 with the AWS SDK v2 for 4.2);
// the one History Server (Spark 4.2) shows both, and the dashboard serves each run's Spark UI
// with its own version's static files.
import t from 'tap';
import { Client } from 'minio';
import { eventually } from '../helpers/kubernetes.js';
import { PI_PY, sparkHistoryNodeUnavailable, startSparkNodeBed } from '../helpers/spark-node.js';
import { sparkRuntimeImage } from '../../testbed/real-node-spark.js';
import { LABEL_APP, SPARK_ROLE } from '../../domain/index.js';

const unavailable = sparkHistoryNodeUnavailable();
// A cold image build takes tens of minutes; a warm run a few minutes.
t.setTimeout(90 * 60_000);

const terminal = (state: string | undefined) => state === 'COMPLETED' || state === 'FAILED' || state === 'KILLED' || state === 'UNKNOWN';
const VERSIONS = ['3.5.7', '4.2.0'];

t.test('a 4.2.0 and a 3.5.7 application side by side on the real node: own images, COMPLETED, event logs in S3, one History Server', { skip: unavailable }, async (t) => {
  const bed = await startSparkNodeBed(t, { versions: VERSIONS, history: true });
  const { core, namespace } = bed;
  const s3 = bed.historyBed!.s3;

  const submitted = new Map<string, string>(); // version -> appName
  for (const version of [...VERSIONS].reverse()) {
    const res = await bed.call('POST', '/api/apps/', {
      jobName: `pi-${version.replaceAll('.', '-')}`,
      configOverrides: { type: 'Python', mainApplicationFile: PI_PY, arguments: ['40'], engineVersion: version, executor: { cores: 1, instances: 1 } },
    });
    t.equal(res.status, 201, res.body);
    const { appName, config } = res.json as { appName: string; config: { image: string; engineConf: Record<string, string> } };
    t.equal(config.image, sparkRuntimeImage(version), `${version}: its version's image, from the rules testbed up writes`);
    t.match(config.engineConf['spark.eventLog.dir'], /^s3a:\/\//, `${version}: admission sends its event log to S3`);
    submitted.set(version, appName);
  }

  for (const [version, appName] of submitted) {
    const executors = await eventually(() => core.listNamespacedPod({ namespace, labelSelector: `${SPARK_ROLE}=executor,${LABEL_APP}=${appName}` }),
      (list) => list.items.length > 0, { what: `${version}: an executor pod`, timeoutMs: 900_000, intervalMs: 1_000 });
    t.equal(executors.items[0]!.spec?.containers[0].image, sparkRuntimeImage(version), `${version}: Spark's executor pod runs its version's image`);
  }
  for (const [version, appName] of submitted) {
    const done = await eventually(async () => (await bed.call('GET', `/api/apps/${appName}`)).json as { state?: string; stateDetail?: string },
      (app) => terminal(app.state), { what: `${appName} to end`, timeoutMs: 900_000, intervalMs: 1_000 });
    const log = (await bed.call('GET', `/api/apps/${appName}/log`)).body;
    t.equal(done.state, 'COMPLETED', done.state === 'COMPLETED' ? `${version}: COMPLETED` : `${done.stateDetail ?? ''}\n${log.slice(-3_000)}`);
    t.match(log, new RegExp(`Running Spark version ${version.replaceAll('.', '\\.')}`), `${version}: the driver log, through the API, names its Spark`);
    t.match(log, /Pi is roughly 3\.1/, `${version}: the driver's output`);
    const driver = await core.readNamespacedPod({ name: appName, namespace });
    t.equal(driver.spec?.containers[0].image, sparkRuntimeImage(version), `${version}: the driver pod ran its version's image`);
  }

  // Each driver wrote its event log to the bucket through S3A (any S3 client sees it).
  const endpoint = new URL(s3.endpoint);
  const client = new Client({ endPoint: endpoint.hostname, port: Number(endpoint.port), useSSL: false, accessKey: s3.accessKey, secretKey: s3.secretKey, pathStyle: true });
  const keys: string[] = [];
  for await (const item of client.listObjectsV2(s3.bucket, 'spark-events/', true)) if (item.name) keys.push(item.name);
  t.equal(keys.filter((key) => /^spark-events\/eventlog_v2_[^/]+\/events_1_/.test(key)).length, 2, 'one event log per run, from both versions\' drivers');

  // The History Server (Spark 4.2's, which reads 3.5's logs too) shows both runs.
  for (const [version, appName] of submitted) {
    const app = await eventually(async () => (await bed.call('GET', `/api/apps/${appName}`)).json as { sparkUi?: { state?: string; url?: string } },
      (a) => a.sparkUi?.state === 'history', { what: `${appName}'s history`, timeoutMs: 300_000, intervalMs: 1_000 });
    t.equal(app.sparkUi?.url, `/dashboard/apps/${appName}/spark-ui/`, `${version}: its Spark UI link is the history's`);
    const jobs = await bed.call('GET', `/dashboard/apps/${appName}/spark-ui/jobs/`, undefined, 300_000);
    t.equal(jobs.status, 200, `${version}: the History Server's jobs page through the dashboard`);
    t.match(jobs.body, /Completed Jobs/, `${version}: its completed job`);
  }
});
