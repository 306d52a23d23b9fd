// On the Kubernetes test bed (`testbed up --nodes --run-pods --auth on`: a real apiserver,
// scheduler and webhook; the FakeKubelet TEST DOUBLE runs admitted driver pods as local
// processes), the notebook gateway that `testbed up` starts (`submission-service gateway
// --api-url`, its own key) serves a real `jupyter server` started with --gateway-url: a
// kernel is an Application in the cluster, a Spark cell answers, interrupt cancels a long
// Spark job, restart keeps the kernel, a killed driver is reported dead, shutdown removes
// the Application.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { APPLICATIONS, GROUP, kubeClients, VERSION } from '../../cluster/kubernetes/client.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { exampleClusterFile } from '../helpers/api.js';
import { eventually } from '../helpers/kubernetes.js';
import { http, realSpark, runTestbed, sparkEnv } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient, startJupyter, toolsEnv } from './jupyter.js';
import { interruptStopsSparkJob, restartKeepsKernel } from './kernel-lifecycle.js';

const testbed = sparkEnv().SUBMISSION_SERVICE_TESTBED;
const skip = !realSpark() || !toolsEnv() ? 'needs the Spark and tools virtualenvs' : !testbed || !existsSync(testbed) ? 'needs SUBMISSION_SERVICE_TESTBED' : false;

t.test('a kernel through a stock jupyter server, the gateway of testbed up, the real apiserver and webhook', { skip, timeout: 900_000 }, async (t) => {
  const root = tempDir(t);
  const dir = join(root, 'cluster');
  // A user's key, in the key store that the API and the gateway of `testbed up` share.
  const key = new FileKeyStore(join(dir, 'keys')).create('user', 'jupyter').key;
  const up = await runTestbed(['up', '--node-pools', exampleClusterFile, '--nodes', '--run-pods', '--auth', 'on', '--dir', dir], 300_000);
  t.teardown(() => runTestbed(['down', '--dir', dir], 300_000)); // a hang guard: at load 26 a stop passed 60 s
  t.equal(up.code, 0, up.stderr.slice(-2000));
  const apiUrl = /BASE_URL=(\S+)/.exec(up.stdout)?.[1];
  const notebooksUrl = /NOTEBOOKS_URL=(\S+)/.exec(up.stdout)?.[1];
  const kubeconfig = /KUBECONFIG=(\S+)/.exec(up.stdout)?.[1];
  t.ok(apiUrl && notebooksUrl && kubeconfig, up.stdout);
  const api = (method: string, path: string) => http(apiUrl!, method, path, undefined, { 'x-api-key': key });
  t.equal((await http(notebooksUrl!, 'GET', '/api/kernels')).status, 401, 'the gateway wants a key (auth on)');

  const jupyter = await startJupyter(t, root, notebooksUrl!, key);
  const jp = (method: string, path: string, body?: unknown) => http(jupyter.url, method, `${path}${path.includes('?') ? '&' : '?'}token=${jupyter.token}`, body);
  const created = await jp('POST', '/api/kernels', { name: 'default' });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const selector = `kernel.submission-service.io/id=${id}`;
  const apps = await api('GET', `/api/apps/?labelSelector=${selector}`);
  t.equal(apps.json.items.length, 1, 'the kernel is an application');
  const custom = kubeClients(kubeconfig).custom;
  const applications = () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: 'spark-apps', plural: APPLICATIONS, labelSelector: selector }) as Promise<{ items: unknown[] }>;
  t.equal((await applications()).items.length, 1, 'an Application resource in the cluster');

  const client = await new KernelClient(`${jupyter.url.replace('http', 'ws')}/api/kernels/${id}/channels?token=${jupyter.token}`).open(t);
  const sum = await client.execute('sc.parallelize(range(100)).sum()', 240_000);
  t.equal(sum.result, '4950', sum.stderr || JSON.stringify(sum.error));
  await interruptStopsSparkJob(t, client, jp, id);
  await restartKeepsKernel(t, client, jp, id);

  // A second kernel is killed from inside: its driver ends, the pod fails, the kernel is dead.
  const other = await jp('POST', '/api/kernels', { name: 'default' });
  const victim = await new KernelClient(`${jupyter.url.replace('http', 'ws')}/api/kernels/${other.json.id}/channels?token=${jupyter.token}`).open(t);
  t.equal((await victim.execute('1', 240_000)).result, '1');
  const from = victim.messages.length;
  const killed = Date.now();
  victim.send('shell', 'execute_request', { code: 'import os, signal; os.killpg(os.getpgid(0), signal.SIGKILL)', silent: false, store_history: false, user_expressions: {}, allow_stdin: false });
  await victim.waitFor((m) => m.header.msg_type === 'status' && m.content.execution_state === 'dead', 15_000, from);
  t.pass(`dead on iopub ${Date.now() - killed} ms after the driver was killed`);

  t.equal((await jp('DELETE', `/api/kernels/${id}`)).status, 204, 'shut down through the Jupyter server');
  t.equal((await api('GET', `/api/apps/?labelSelector=${selector}`)).json.items.length, 0, 'the application is gone from the API');
  await eventually(applications, (list) => list.items.length === 0, { what: 'the Application resource to be deleted' });
  t.pass('and its Application resource from the cluster');
});
