// On the Kubernetes test bed (`testbed up --run-pods --auth on`: a real apiserver, the garbage
// collector and the webhook; the FakeKubelet TEST DOUBLE runs driver pods as local processes
// and materializes their Secret volumes, testbed/secret-volumes.ts), a kernel's launcher token
// (issue 17) is a Secret owned by the kernel's Application and mounted into its driver: it is
// in no application config, API answer or events stream (keys A, B and an admin), nor in the
// driver pod's spec, the Application resource or the namespace's Events; the launcher connects
// with it, and the Secret goes with the Application.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { APPLICATIONS, GROUP, kubeClients, VERSION } from '../../cluster/kubernetes/client.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { exampleClusterFile } from '../helpers/api.js';
import { eventually } from '../helpers/kubernetes.js';
import { http, realSpark, runTestbed, sparkEnv } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const testbed = sparkEnv().SUBMISSION_SERVICE_TESTBED;
const skip = !realSpark() ? 'needs the Spark virtualenv' : !testbed || !existsSync(testbed) ? 'needs SUBMISSION_SERVICE_TESTBED' : false;
const NS = 'spark-apps';

t.test('a kernel\'s launcher token is a Secret of its Application, in no config, env, answer or event', { skip, timeout: 900_000 }, async (t) => {
  const root = tempDir(t);
  const dir = join(root, 'cluster');
  const store = new FileKeyStore(join(dir, 'keys'));
  const keyA = store.create('user', 'A').key;
  const keyB = store.create('user', 'B').key;
  const admin = store.create('admin', 'admin').key;
  const up = await runTestbed(['up', '--node-pools', exampleClusterFile, '--nodes', '--run-pods', '--auth', 'on', '--dir', dir], 300_000);
  t.teardown(() => runTestbed(['down', '--dir', dir], 300_000)); // a hang guard: at load 26 a stop passed 60 s
  t.equal(up.code, 0, up.stderr.slice(-2000));
  const apiUrl = /BASE_URL=(\S+)/.exec(up.stdout)![1]!;
  const notebooksUrl = /NOTEBOOKS_URL=(\S+)/.exec(up.stdout)![1]!;
  const { core, custom } = kubeClients(/KUBECONFIG=(\S+)/.exec(up.stdout)![1]!);
  const api = (key: string, method: string, path: string, body?: unknown) => http(apiUrl, method, path, body, { 'x-api-key': key });
  // A plain Python kernel (no SparkContext): what is tested is how its launcher gets in.
  t.equal((await api(admin, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } })).status, 201);

  // B (and A) follow the events stream of kernels from before the kernel exists.
  const follower = new AbortController();
  t.teardown(() => follower.abort());
  const streamed: Record<string, string> = { A: '', B: '' };
  for (const [who, key] of [['A', keyA], ['B', keyB]] as const) {
    const events = await fetch(`${apiUrl}/api/apps/events?labelSelector=kernel.submission-service.io/kernel%3Dtrue`, { headers: { 'x-api-key': key }, signal: follower.signal });
    t.equal(events.status, 200);
    void (async () => {
      for await (const chunk of events.body as unknown as AsyncIterable<Uint8Array>) streamed[who] += Buffer.from(chunk).toString();
    })().catch(() => undefined);
  }

  const created = await http(notebooksUrl, 'POST', '/api/kernels', { name: 'plain' }, { authorization: `token ${keyA}` });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const client = await new KernelClient(`${notebooksUrl.replace('http', 'ws')}/api/kernels/${id}/channels?token=${keyA}`).open(t);
  t.equal((await client.execute('x = 42; x', 240_000)).result, '42', 'the launcher connected with the token from its mounted Secret');

  const appName = (await api(keyA, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`)).json.items[0].appName as string;
  const secret = await core.readNamespacedSecret({ name: `${appName}-launcher`, namespace: NS });
  const token = Buffer.from(secret.data!.token!, 'base64').toString();
  t.ok(token.length >= 16, 'the Secret holds the token');
  const application = await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: APPLICATIONS, name: appName }) as { metadata: { uid: string } };
  t.same(secret.metadata!.ownerReferences?.map((o) => ({ kind: o.kind, name: o.name, uid: o.uid })), [{ kind: 'Application', name: appName, uid: application.metadata.uid }],
    'owned by the kernel\'s Application');

  await t.test('the token is in no answer, event, config or pod spec', async (t) => {
    const pod = await core.readNamespacedPod({ name: appName, namespace: NS });
    const driver = pod.spec!.containers[0]!;
    t.notOk(JSON.stringify(pod).includes(token), 'not in the driver pod (its env names the file only)');
    t.notOk(driver.env?.some((e) => e.name === 'SUBMISSION_SERVICE_KERNEL_TOKEN'), 'no token variable');
    t.equal(driver.env?.find((e) => e.name === 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE')?.value, '/var/run/submission-service/launcher/token');
    t.same(pod.spec!.volumes?.find((v) => v.secret)?.secret, { secretName: `${appName}-launcher`, defaultMode: 0o440 }, 'a Secret volume, 0440');
    t.equal(driver.volumeMounts?.find((m) => m.mountPath === '/var/run/submission-service/launcher')?.readOnly, true, 'mounted read-only');
    t.equal(pod.spec!.securityContext?.fsGroup, 185, 'readable by the Spark image\'s user through its group');
    t.notOk(JSON.stringify(application).includes(token), 'not in the Application resource');
    const events = await core.listNamespacedEvent({ namespace: NS });
    t.notOk(JSON.stringify(events).includes(token), 'not in the namespace\'s Events');
    for (const [who, key] of [['A', keyA], ['B', keyB], ['an admin', admin]] as const) {
      const answers = [
        await api(key, 'GET', `/api/apps/${appName}`),
        await api(key, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`),
        await api(key, 'GET', `/api/apps/${appName}/submission`),
      ];
      t.ok(answers.every((a) => a.status === 200 && !a.text.includes(token)), `not in what ${who} reads of the application`);
    }
    await eventually(async () => streamed, (s) => s.A.includes(appName) && s.B.includes(appName), { what: 'the kernel\'s application on both event streams' });
    t.notOk(streamed.A.includes(token) || streamed.B.includes(token), 'not on the events stream of A or B');
    const seen = (await client.execute('import os; print(sorted(k for k in os.environ if "KERNEL_TOKEN" in k))', 60_000)).stdout.trim();
    t.equal(seen, '[]', 'nor in the environment of the kernel\'s own code');
  });

  await t.test('the Secret goes with the Application', async (t) => {
    t.equal((await http(notebooksUrl, 'DELETE', `/api/kernels/${id}`, undefined, { authorization: `token ${keyA}` })).status, 204);
    await eventually(() => core.readNamespacedSecret({ name: `${appName}-launcher`, namespace: NS }).then(() => 'there', (error: { code?: number }) => (error.code === 404 ? 'gone' : 'error')),
      (state) => state === 'gone', { what: 'the garbage collector to remove the launcher Secret', timeoutMs: 60_000 });
    t.pass('removed by the garbage collector through its ownerReference');
  });
});
