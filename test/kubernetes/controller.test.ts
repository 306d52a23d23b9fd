// The controller on the test bed (real apiserver, real garbage collector): status written on
// every transition without anyone reading, a leader killed mid-run and replaced, deletion by
// ownership, and the reason of a pod stuck on a missing image.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { register } from 'prom-client';
import { hostname } from 'node:os';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { timingForLease } from '../../cluster/kubernetes/lease-decision.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { eventually, fakeKubelet, freePort, startApi, startKubeBed } from '../helpers/kubernetes.js';

const repoRoot = join(import.meta.dirname, '..', '..');

t.test('the controller', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const namespace = bed.namespace;
  const submit = async (jobName: string, configOverrides: object = {}) => {
    const res = await bed.call('POST', '/api/apps/', { jobName, configOverrides });
    t.equal(res.status, 201, `submitted ${jobName}`);
    return res.json.appName as string;
  };
  const application = async (name: string) => (await bed.applications()).find((a) => a.metadata.name === name);

  t.test('COMPLETED, then its pod deleted at once, never read in between: listed COMPLETED', async (t) => {
    const appName = await submit('quick');
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    await fakeKubelet(bed.clients, namespace, appName, 'Succeeded');
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    // No GET in between: only the controller saw it. Its status in the cluster says so.
    const written = await eventually(() => application(appName), (a) => a?.status?.state === 'COMPLETED', { what: 'the controller to write COMPLETED' });
    t.equal(written?.status.stateDetail, 'exit code 0 (Completed)');
    t.same(written?.status.transitions.map((x: { state: string }) => x.state), ['PENDING', 'RUNNING', 'COMPLETED'], 'every transition, with its time');
    const listed = (await bed.call('GET', '/api/apps/?jobName=quick')).json.items;
    t.equal(listed.length, 1);
    t.equal(listed[0].state, 'COMPLETED');
    t.same(listed[0].transitions, written?.status.transitions, 'the API shows the transitions');
    t.same((await bed.call('GET', `/api/apps/${appName}`)).json, listed[0], 'get and list agree');
    // The controller's series (prom-client's default registry, which the API's /metrics serves).
    const transitions = await register.getSingleMetricAsString('submission_service_state_transition_seconds');
    t.match(transitions, /submission_service_state_transition_seconds_count\{from="PENDING",to="RUNNING"\} [1-9]/, 'submitted -> running observed');
    t.match(transitions, /submission_service_state_transition_seconds_count\{from="RUNNING",to="COMPLETED"\} [1-9]/, 'running -> ended observed');
    t.match(await register.getSingleMetricAsString('submission_service_applications'), /submission_service_applications\{state="COMPLETED"\} [1-9]/, 'applications by state');
    t.match(await register.getSingleMetricAsString('submission_service_controller_writes_total'), /kind="status",outcome="ok"\} [1-9]/);
  });

  t.test('what an app was submitted with outlives its driver pod: the controller keeps it on the Application', async (t) => {
    const appName = await submit('kept', { executor: { cores: 2 } });
    await eventually(() => application(appName), (a) => Object.keys(a?.spec.config ?? {}).length > 0, { what: 'the controller to copy the config' });
    const before = (await bed.call('GET', `/api/apps/${appName}/submission`)).json;
    t.equal(before.driverPod, true);
    t.same(before.configOverrides, { executor: { cores: 2 } });
    t.ok(before.admittedBy, 'admitted');
    t.ok(before.sizing?.driver?.pool, 'the webhook recorded its sizing decision');
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    await fakeKubelet(bed.clients, namespace, appName, 'Succeeded');
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    const after = await eventually(() => bed.call('GET', `/api/apps/${appName}/submission`), (r) => r.json.driverPod === false, { what: 'the deleted pod to leave the cache' });
    t.same({ ...after.json, driverPod: true }, before, 'overrides, admission mark and sizing from the Application');
  });

  t.test('events in Kubernetes mode come from the cache: every change, then the deletion', async (t) => {
    const abort = new AbortController();
    t.teardown(() => abort.abort());
    const response = await fetch(`${bed.api.baseUrl}/api/apps/events?jobName=evk`, { signal: abort.signal });
    const seen: { event: string; data: { appName?: string; state?: string } }[] = [];
    const reading = (async () => {
      let buffer = '';
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += Buffer.from(chunk).toString('utf8');
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event) seen.push({ event, data: JSON.parse(data ?? '{}') });
          }
        }
      } catch { /* aborted at the end of the test */ }
    })();
    await eventually(async () => seen, (s) => s.some((e) => e.event === 'ready'), { what: 'ready' });
    const appName = await submit('evk');
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    await fakeKubelet(bed.clients, namespace, appName, 'Succeeded');
    await eventually(async () => seen, (s) => s.some((e) => e.data.state === 'COMPLETED'), { what: 'COMPLETED on the stream' });
    t.equal((await bed.call('DELETE', `/api/apps/${appName}`)).status, 204);
    await eventually(async () => seen, (s) => s.some((e) => e.event === 'deleted'), { what: 'deleted on the stream' });
    const states = seen.filter((e) => e.event === 'changed' && e.data.appName === appName).map((e) => e.data.state);
    t.same([...new Set(states)], ['PENDING', 'RUNNING', 'COMPLETED'], 'each state, in order');
    t.equal(seen[seen.length - 1].data.appName, appName);
    abort.abort();
    await reading;
  });

  t.test('apps submit --follow in Kubernetes mode: states from the event stream, exit code from the end', async (t) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'submission-service.js'), 'apps', 'submit', '--job', 'follower', '--follow', '--url', bed.api.baseUrl],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SUBMISSION_SERVICE_API_KEY: '' } });
    let stderr = '';
    child.stderr!.on('data', (c) => { stderr += c; });
    child.stdout!.resume();
    const code = new Promise<number | null>((ok) => child.once('exit', (c) => ok(c)));
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
    const appName = (await eventually(async () => /submitted (\S+)/.exec(stderr)?.[1], Boolean, { what: 'the CLI to submit' }))!;
    await eventually(async () => stderr, (s) => s.includes(`${appName} PENDING`), { what: 'PENDING shown' });
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    await eventually(async () => stderr, (s) => s.includes(`${appName} RUNNING`), { what: 'RUNNING shown' });
    await fakeKubelet(bed.clients, namespace, appName, 'Failed', 2);
    t.equal(await code, 1, 'exit 1 for FAILED');
    t.match(stderr, new RegExp(`${appName} FAILED \\(exit code 2 \\(Error\\)\\)`));
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
  });

  t.test('kubectl delete application: the garbage collector removes its pods', async (t) => {
    const appName = await submit('owned');
    const driver = await core.readNamespacedPod({ name: appName, namespace });
    t.equal(driver.metadata?.ownerReferences?.[0]?.kind, 'Application');
    await bed.clients.custom.deleteNamespacedCustomObject({ group: 'submission-service.io', version: 'v1', namespace, plural: 'applications', name: appName });
    await eventually(() => core.readNamespacedPod({ name: appName, namespace }).then(() => false, (e) => e.code === 404), Boolean, { what: 'the driver pod to be collected' });
    t.pass('the driver pod is gone');
    await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => r.status === 404, { what: 'the API to forget it' });
    t.pass('the API answers 404');
  });

  t.test('a pod stuck on a missing image says so in stateDetail', async (t) => {
    const image = 'registry.invalid/spark:missing';
    const kubelet = new FakeKubelet({ clients: bed.clients, namespace, dataDir: join(bed.dir, 'kubelet'), sparkSubmit: '/bin/false', cores: 1, missingImages: [image] });
    await kubelet.start();
    t.teardown(() => kubelet.stop());
    const appName = await submit('badimage', { image });
    const app = await eventually(() => bed.call('GET', `/api/apps/${appName}`), (r) => /ImagePullBackOff/.test(r.json?.stateDetail ?? ''), { what: 'ImagePullBackOff in stateDetail' });
    t.equal(app.json.state, 'PENDING', 'not terminal: the image may appear');
    t.match(app.json.stateDetail, new RegExp(`ImagePullBackOff: Back-off pulling image "${image}"`));
  });
  t.test('an Application whose pod never came is UNKNOWN after the grace period', async (t) => {
    // What a crash between the two writes leaves: the Application alone.
    const other = await startApi(bed.testbed.kubeconfig, namespace, { controller: false });
    t.teardown(() => other.close());
    await bed.api.cluster.close(); // the bed's replica gives up the lease: a short-grace controller takes it
    const controller = await startApi(bed.testbed.kubeconfig, namespace, { missingPodGraceMs: 1500, lease: timingForLease(2_000) });
    t.teardown(() => controller.close());
    const name = 'crashed-20261123-000000-abcde';
    await bed.clients.custom.createNamespacedCustomObject({
      group: 'submission-service.io', version: 'v1', namespace, plural: 'applications',
      body: { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { name, labels: { 'submission-service/job-name': 'crashed' } }, spec: { jobName: 'crashed', configTemplateName: '', config: {} } },
    });
    const before = await eventually(() => other.cluster.get(name), (r) => r !== undefined, { what: 'the cache to see it' });
    t.equal(before?.state, 'PENDING', 'pending while its pod may still come');
    const after = await eventually(() => application(name), (a) => a?.status?.state === 'UNKNOWN', { what: 'UNKNOWN', timeoutMs: 15_000 });
    t.match(after?.status.stateDetail, /no driver pod/);
  });

});

t.test('kill the leader mid-run: another replica takes over and every transition is recorded', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  const namespace = bed.namespace;
  await bed.api.cluster.close(); // out of the election: two replicas with a 2 s lease below
  const port = await freePort();
  const leader: ChildProcess = spawn(process.execPath, [join(repoRoot, 'bin', 'submission-service.js'), 'api', '--kubeconfig', bed.testbed.kubeconfig,
    '--namespace', namespace, '--auth', 'off', '--port', String(port), '--host', '127.0.0.1', '--lease-seconds', '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  leader.stdout!.on('data', (c) => { output += c; });
  leader.stderr!.on('data', (c) => { output += c; });
  const exited = new Promise<void>((ok) => leader.once('exit', () => ok()));
  t.teardown(async () => { if (leader.exitCode === null && leader.signalCode === null) { leader.kill('SIGKILL'); await exited; } });
  // Ready: the line the API prints once it listens (the cache is listed before the port opens).
  await eventually(async () => output, (o) => o.includes(`at http://127.0.0.1:${port}/api/`), { what: 'the child replica to listen', timeoutMs: 60_000 });
  // Leading: the Lease names it (its identity is hostname-pid-random).
  const leases = bed.clients.kc.makeApiClient(CoordinationV1Api);
  const holder = () => leases.readNamespacedLease({ name: 'submission-service-controller', namespace }).then((l) => l.spec?.holderIdentity ?? '', () => '');
  await eventually(holder, (h) => h.startsWith(`${hostname()}-${leader.pid}-`), { what: 'the child replica to hold the Lease', timeoutMs: 30_000 });
  const follower = await startApi(bed.testbed.kubeconfig, namespace, { lease: timingForLease(2_000) });
  t.teardown(() => follower.close());
  t.notOk(follower.cluster.leader?.isLeader, 'the second replica follows');

  const res = await fetch(`http://127.0.0.1:${port}/api/apps/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobName: 'failover' }) });
  const appName = ((await res.json()) as { appName: string }).appName;
  const application = async () => (await bed.applications()).find((a) => a.metadata.name === appName);
  await fakeKubelet(bed.clients, namespace, appName, 'Running');
  await eventually(application, (a) => a?.status?.state === 'RUNNING', { what: 'the leader to write RUNNING' });
  leader.kill('SIGKILL');
  await exited;
  const killedAt = performance.now();
  await fakeKubelet(bed.clients, namespace, appName, 'Failed', 3);
  const done = await eventually(application, (a) => a?.status?.state === 'FAILED', { what: 'the new leader to write FAILED', timeoutMs: 20_000 });
  // A figure, not an assertion (the suite runs beside other load): the lease is 2 s.
  t.comment(`taken over and FAILED written ${Math.round(performance.now() - killedAt)} ms after the kill (lease 2 s)`);
  t.ok(follower.cluster.leader?.isLeader, 'the follower leads now');
  t.same(done?.status.transitions.map((x: { state: string }) => x.state), ['PENDING', 'RUNNING', 'FAILED']);
  t.equal(done?.status.stateDetail, 'exit code 3 (Error)');
  t.ok(done?.status.transitions.every((x: { at: string }) => !Number.isNaN(Date.parse(x.at))), 'each with its time');
  await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
});
