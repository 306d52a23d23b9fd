// Runs alone (scripts/test.sh): it starts the machine's one real node.
//
// One user's driver against another's (issue 25), with the service's own driver pods: the chart
// installed on the real node with NetworkPolicy enforced (kube-router, testbed/node-policy.ts),
// history in the test bed's S3 server and a key per application (`history.driverKeys:
// versitygw`), the History Server as the chart runs it (a pod behind its Service). B, submitted
// with B's user key, holds its driver, its Spark UI and its event log open. A, submitted with A's
// user key, runs test/fixtures/isolation/probes.py: from inside A's driver pod, with the key
// admission gave it and plain sockets, it tries to list, read, write and delete B's folder, the
// History Server's directory and the archived logs, and to open B's driver ports and the History
// Server (by Service name, ClusterIP and pod address); and with its service-account token, to
// read B's Secret, create a pod given it and delete B's driver (dry runs). Every attempt is
// refused (403 AccessDenied or Forbidden; connection refused or timed out), while the same tools
// reach A's own folder, the store and A's own executor, Spark's driver still creates and deletes
// its executor, and the api's proxy still serves B's live UI to B's key (and not to A's).
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { nodeIp } from '../../testbed/real-node.js';
import { S3_REGION, startS3Server } from '../../testbed/s3-server.js';
import { policyEnforcedFor } from '../../testbed/node-policy.js';
import type { CreatedKey } from '../../submit-api/auth/key-store.js';
import { eventLogSecretName, LABEL_APP, SPARK_ROLE } from '../../domain/index.js';
import { repoRoot } from '../helpers/api.js';
import { APPS, chartNodeUnavailable, installChart, NS, readyPod, send } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { realNodeUnavailable } from '../helpers/real-node.js';
import { SPARK_RUNTIME_IMAGE } from '../helpers/spark-node.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = chartNodeUnavailable() || realNodeUnavailable({ enforceNetworkPolicy: true })
  || (s3Binary ? false : 'no S3 server (test/s3/build.sh; scripts/test.sh sets SUBMISSION_SERVICE_S3_SERVER)');
// A cold image build alone takes tens of minutes on two busy cores.
t.setTimeout(120 * 60_000);

const CREDENTIALS = 'spark-history-s3';
const HISTORY_PORT = 18080;
const TERMINAL = ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'];
const DENIED = '403 AccessDenied';
const REFUSED = /^(refused|timeout)$/;

/** The programs (test/fixtures/isolation), served to the node's pods from this process; `/release` answers 200 once released. */
async function servePrograms(t: { teardown(fn: () => unknown): void }) {
  const dir = join(repoRoot, 'test', 'fixtures', 'isolation');
  let released = false;
  const server = createServer((req, res) => {
    if (req.url === '/release') return void res.writeHead(released ? 200 : 404).end();
    const name = /^\/([a-z-]+\.py)$/.exec(req.url ?? '')?.[1];
    let body: Buffer | undefined;
    try { body = name ? readFileSync(join(dir, name)) : undefined; } catch { body = undefined; }
    res.writeHead(body ? 200 : 404, { 'content-type': 'text/x-python' }).end(body ?? 'no such program');
  });
  await new Promise<void>((ok) => server.listen(0, nodeIp(), ok));
  t.teardown(() => new Promise((ok) => { server.closeAllConnections(); server.close(ok); }));
  const url = (name: string) => `http://${nodeIp()}:${(server.address() as AddressInfo).port}/${name}`;
  return { url, release: () => { released = true; } };
}

/**
 * The chart on the real node with NetworkPolicy enforced, history in S3 with a key per
 * application, and two user keys: A's and B's. `submit` sends a program of
 * test/fixtures/isolation as one of them, small (the node has two cores, no executors).
 */
async function installWithKeyPerApplication(t: Test) {
  // On the machine's own address (the pods write to it), with its own IAM: a key per application.
  const s3 = await startS3Server(s3Binary!, join(tempDir(t, 'isolation-s3-'), 's3'), 'spark-history', nodeIp(), { users: true });
  t.teardown(() => s3.stop());
  await s3.store.ensureFolder('spark-events');
  const programs = await servePrograms(t);
  const credentials = { metadata: { name: CREDENTIALS }, type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey } };
  const small = { requests: { cpu: '10m', memory: '128Mi' }, limits: { memory: '512Mi' } };
  const { bed, keys, accepted, base, agent } = await installChart(t, {
    nodePool: true,
    adminKey: false,
    enforceNetworkPolicy: true,
    values: {
      history: {
        eventLogDir: `s3a://${s3.bucket}/spark-events`, s3Endpoint: s3.endpoint, s3Region: S3_REGION, credentialsSecret: CREDENTIALS, driverKeys: 'versitygw',
        server: { image: SPARK_RUNTIME_IMAGE, resources: { requests: { cpu: '10m', memory: '512Mi' }, limits: { memory: '1Gi' } } },
      },
      notebookService: { enabled: false },
      api: { replicas: 1, resources: small },
      webhook: { replicas: 1, resources: small },
    },
    // The controller's key (a versitygw admin), for the api and the History Server; no driver gets it.
    prepare: async ({ core }) => { await core.createNamespacedSecret({ namespace: NS, body: credentials }); },
  });
  const [alice, bob] = [await keys.create('user', 'isolation: A, the attacker'), await keys.create('user', 'isolation: B, the victim')];
  await accepted(alice.key);
  await accepted(bob.key);
  const call = (who: CreatedKey, method: string, path: string, body?: unknown) => send(agent, base, method, path, who.key, body);
  const submit = async (who: CreatedKey, jobName: string, program: string, args: string[], executors = 0) => {
    const small = { coreRequest: '100m', memory: '512m' };
    const res = await call(who, 'POST', '/api/apps/', {
      jobName, configOverrides: { type: 'Python', mainApplicationFile: programs.url(program), arguments: args, driver: small, executor: { ...small, cores: 1, instances: executors } },
    });
    if (res.status !== 201) throw new Error(`${jobName}: ${res.status} ${res.text}`);
    return (res.json as { appName: string }).appName;
  };
  return { s3, core: bed.core, programs, alice, bob, call, submit };
}

t.test("on the real node, A's driver reaches none of B's objects, B's driver or the History Server; the api's proxy still serves B's UI", { skip }, async (t) => {
  const started = Date.now();
  const { s3, core, programs, alice, bob, call, submit } = await installWithKeyPerApplication(t);

  // B: its driver Running, with an executor its Spark made (a pod of the applications namespace
  // creates its own executors), its UI answering through the api's proxy, its event log in its own folder.
  const b = await submit(bob, 'victim', 'holds-ui.py', [programs.url('release')], 1);
  const bDriver = await eventually(() => core.readNamespacedPod({ name: b, namespace: APPS }), (p) => p.status?.phase === 'Running' && Boolean(p.status.podIP),
    { what: "B's driver Running", timeoutMs: 600_000, intervalMs: 1_000 });
  const executorsOf = (app: string) => core.listNamespacedPod({ namespace: APPS, labelSelector: `${SPARK_ROLE}=executor,${LABEL_APP}=${app}` }).then((list) => list.items);
  await eventually(() => executorsOf(b), (pods) => pods.some((p) => p.status?.phase === 'Running'), { what: "B's executor Running", timeoutMs: 600_000, intervalMs: 1_000 });
  const uiPath = `/dashboard/apps/${b}/spark-ui/jobs/`;
  await eventually(() => call(bob, 'GET', uiPath), (r) => r.status === 200, { what: "B's live Spark UI through the api's proxy", timeoutMs: 600_000, intervalMs: 1_000 });
  const folder = async (prefix: string) => {
    const found: string[] = [];
    for await (const item of s3.store.list(prefix)) if ('key' in item) found.push(item.key);
    return found;
  };
  const bObjects = await eventually(() => folder(`spark-incoming/${b}/`), (found) => found.some((k) => /\/appstatus_[^/]+\.inprogress$/.test(k)),
    { what: "B's event log in its folder", timeoutMs: 300_000, intervalMs: 1_000 });
  const bLog = bObjects.find((k) => /\/appstatus_[^/]+\.inprogress$/.test(k))!;
  // What the controller alone writes, there to be read: an entry of the history, an archived log.
  const planted = ['spark-events/planted-by-test', `spark-logs/${b}/planted.log`];
  for (const key of planted) await s3.store.put(key, Buffer.from(`written by the controller's key: ${key}`), 'text/plain');

  // The History Server as the chart runs it, and every policy enforced on the pods it selects.
  // Waited for: on a loaded machine its JVM may still be starting when B's log is in (the hog run: not Ready yet).
  const history = await eventually(async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/component=history' })).items.find(readyPod),
    (pod) => Boolean(pod?.status?.podIP), { what: 'the History Server pod to be Ready', timeoutMs: 600_000, intervalMs: 1_000 }).catch(() => undefined);
  t.ok(history?.status?.podIP, 'the History Server runs as a pod (the chart\'s Deployment), Ready');
  if (!history) return;
  const historyService = await core.readNamespacedService({ name: 'submission-service-history', namespace: NS });
  await eventually(async () => policyEnforcedFor('submission-service-driver-ui', b, APPS) && policyEnforcedFor(`${b}-pods`, b, APPS)
    && policyEnforcedFor('submission-service-history', history.metadata!.name!, NS), (yes) => yes,
  { what: "kube-router to enforce the chart's policies and B's own", timeoutMs: 180_000, intervalMs: 1_000 });

  // A: the attacker's program, in a driver of the service's own, under A's user key.
  const targets = {
    victim: b, victimIp: bDriver.status!.podIP!, victimSecret: eventLogSecretName(b), objects: [bLog, ...planted], historyPort: HISTORY_PORT,
    history: { service: `submission-service-history.${NS}.svc`, clusterIp: historyService.spec!.clusterIP!, pod: history.status!.podIP! },
  };
  const a = await submit(alice, 'attacker', 'probes.py', [JSON.stringify(targets)]);
  const ended = await eventually(async () => (await call(alice, 'GET', `/api/apps/${a}`)).json as { state?: string; stateDetail?: string },
    (app) => TERMINAL.includes(app.state ?? ''), { what: "A's run to end", timeoutMs: 900_000, intervalMs: 1_000 });
  const log = (await call(alice, 'GET', `/api/apps/${a}/log`)).text ?? '';
  t.equal(ended.state, 'COMPLETED', ended.state === 'COMPLETED' ? "A's driver ran its program to the end" : `${ended.stateDetail ?? ''}\n${log.slice(-3_000)}`);
  const line = /^ISOLATION-PROBES (\{.*\})$/m.exec(log)?.[1];
  if (!line) throw new Error(`no ISOLATION-PROBES line in A's driver log:\n${log.slice(-3_000)}`);
  const outcome = JSON.parse(line) as Record<string, string>;
  t.comment(`A's attempts: ${line}`);

  t.equal(outcome.ownFolder, `spark-incoming/${a}`, "admission pointed A's event log at A's own folder");
  t.equal(outcome.keyId, `ss-${a}`, "A's driver holds A's own key (not the controller's, not B's)");
  // Controls: the tools work where A has rights.
  t.same([outcome['own write'], outcome['own read'], outcome['own list'], outcome['own delete']], ['200', '200', '200', '204'],
    'with its key, A writes, reads, lists and deletes in its own folder');
  t.equal(outcome['connect store'], 'connected', "A's driver reaches the store's port (the pod network carries it)");
  // The store: nothing of B's, of the history or of the archive, whatever the call.
  const storage = Object.entries(outcome).filter(([name]) => /^(list|read|write|delete) /.test(name));
  t.equal(storage.length, 6 + 3 * 3 + 3, 'every storage attempt was made');
  for (const [name, result] of storage) t.equal(result, DENIED, `A's key: ${name}`);
  t.equal((await s3.store.readSmall(bLog, 1_000))?.length, 0, "B's status file is as its driver wrote it");
  for (const key of planted) t.equal((await s3.store.readSmall(key, 1_000))?.toString(), `written by the controller's key: ${key}`, `${key} untouched`);
  t.same(await folder(`spark-incoming/${b}/forged`), [], "nothing forged in B's folder");
  // The network: neither B's driver (its UI and other ports) nor the History Server, by any address.
  const network = Object.entries(outcome).filter(([name]) => /^connect (victim|history)/.test(name));
  t.equal(network.length, 6, 'every connection was attempted');
  for (const [name, result] of network) t.match(result, REFUSED, `A's driver: ${name} (${result})`);

  // The apiserver, with the driver's service-account token: not B's Secret, nor through a pod given it, nor B's driver.
  t.equal(outcome['kube read own driver'], '200', 'the token reads pods (Spark needs it): the tool works');
  t.match(outcome[`kube read secret ${eventLogSecretName(b)}`], /^403\b/, "A's driver cannot read B's key from its Secret");
  t.match(outcome['kube create pod given the secret'], /^403\b/, `nor create a pod given B's Secret (${outcome['kube create pod given the secret']})`);
  t.match(outcome['kube create executor given the secret'], /^403\b/, `nor an executor of its own given it (${outcome['kube create executor given the secret']})`);
  t.match(outcome['kube delete victim driver'], /^403\b/, `nor delete B's driver (${outcome['kube delete victim driver']})`);
  t.equal(outcome['kube create own executor'], '201', 'while it may create its own executors, as Spark does');
  t.match(outcome['kube create executor wearing the api\'s labels'], /^403\b/, `but not one wearing the api's labels, which the NetworkPolicies admit everywhere (${outcome['kube create executor wearing the api\'s labels']})`);

  // The service still reaches B's live UI, for B's key only.
  const ui = await call(bob, 'GET', uiPath);
  t.equal(ui.status, 200, "the api's proxy serves B's live Spark UI to B's key");
  t.match(ui.text, /Spark Jobs/, "B's jobs page");
  const stranger = await call(alice, 'GET', uiPath);
  t.ok(stranger.status === 403 || stranger.status === 404, `not to A's key (${stranger.status})`);

  // B was not disturbed: released, it ends COMPLETED.
  programs.release();
  const bEnded = await eventually(async () => (await call(bob, 'GET', `/api/apps/${b}`)).json as { state?: string },
    (app) => TERMINAL.includes(app.state ?? ''), { what: "B's run to end", timeoutMs: 600_000, intervalMs: 1_000 });
  t.equal(bEnded.state, 'COMPLETED', 'B ends COMPLETED');
  // Spark's driver deleted its executor as it stopped (the log archive's finalizer may hold the pod a while).
  await eventually(() => executorsOf(b), (pods) => pods.every((p) => p.metadata?.deletionTimestamp), { what: "B's executor deleted by its driver", timeoutMs: 120_000, intervalMs: 1_000 });
  t.pass("B's driver deleted its own executor");
  process.stderr.write(`real-node-isolation: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});
