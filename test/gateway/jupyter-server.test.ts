// Acceptance, local mode, real parts only: `submission-service local --auth on`, a real
// `jupyter server` pointed at its /notebooks with a user key, a real ipykernel and pyspark in
// the driver. Through the Jupyter server's own REST API and websocket: start a kernel from a
// template, use sc / sqlContext / spark, interrupt a running Spark job, restart, shut down.
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient, startJupyter, toolsEnv } from './jupyter.js';

const skip = !realSpark() || !toolsEnv() ? 'needs the Spark and tools virtualenvs' : false;

t.test('a stock jupyter server runs Spark cells on a template kernel', { skip, timeout: 600_000 }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  const key = store.create('user', 'jupyter').key;
  const admin = store.create('admin', 'templates').key;
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2'] });
  const api = (method: string, path: string, body?: unknown, k = key) => http(service.url, method, path, body, { 'x-api-key': k });

  t.equal((await api('POST', '/api/config-templates/', { name: 'notebook', config: { pythonVersion: '3', engineVersion: '3.5.7' } }, admin)).status, 201);
  const jupyter = await startJupyter(t, root, `${service.url}/notebooks`, key);
  const jp = (method: string, path: string, body?: unknown) => http(jupyter.url, method, `${path}${path.includes('?') ? '&' : '?'}token=${jupyter.token}`, body);

  const specs = await jp('GET', '/api/kernelspecs');
  t.equal(specs.status, 200, specs.text);
  t.ok(specs.json.kernelspecs.notebook, 'the template is a kernel spec');
  t.ok(specs.json.kernelspecs.default, 'and default');
  const logo = await fetch(`${jupyter.url}${specs.json.kernelspecs.notebook.resources['logo-64x64']}?token=${jupyter.token}`);
  t.equal(logo.status, 200, 'the logo is served through the Jupyter server');
  t.same([...new Uint8Array(await logo.arrayBuffer()).slice(1, 4)], [0x50, 0x4e, 0x47], 'as a PNG');

  const started = Date.now();
  const created = await jp('POST', '/api/kernels', { name: 'notebook' });
  t.equal(created.status, 201, created.text);
  t.ok(Date.now() - started < 5000, `POST /api/kernels answered at once (${Date.now() - started} ms)`);
  const id: string = created.json.id;
  t.match(id, /^[0-9a-f-]{36}$/);

  const apps = await api('GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`);
  t.equal(apps.json.items.length, 1, 'the kernel is an application');
  t.equal(apps.json.items[0].configTemplateName, 'notebook');
  t.equal(apps.json.items[0].labels['kernel.submission-service.io/spec'], 'notebook', 'whose record says which kernel');

  const list = await jp('GET', '/api/kernels');
  const listed = list.json.find((k: { id: string }) => k.id === id);
  t.ok(listed, 'listed by the Jupyter server');
  t.type(listed.connections, 'number');
  t.match(listed.last_activity, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/);

  const client = await new KernelClient(`${jupyter.url.replace('http', 'ws')}/api/kernels/${id}/channels?token=${jupyter.token}`).open(t);
  const sum = await client.execute('sc.parallelize(range(100)).sum()', 180_000);
  t.equal(sum.reply.content.status, 'ok', sum.stderr || `${sum.reply.content.ename}: ${sum.reply.content.evalue}`);
  t.equal(sum.result, '4950');
  const sql = await client.execute('sqlContext.sql("select 1 as x").collect()');
  t.equal(sql.result, '[Row(x=1)]');
  const count = await client.execute('spark.range(10).count()');
  t.equal(count.result, '10');
  const busyFirst = client.messages.findIndex((m) => m.header.msg_type === 'status');
  t.equal(client.messages[busyFirst]?.content.execution_state, 'busy', 'iopub said busy while the driver started');

  // Interrupt a long Spark job: the cell stops and so do its tasks.
  const from = client.messages.length;
  const long = client.execute('sc.parallelize(range(400), 2).map(lambda x: __import__("time").sleep(0.5)).count()', 120_000);
  await client.waitFor((m) => m.header.msg_type === 'execute_input', 30_000, from);
  await new Promise((ok) => setTimeout(ok, 4000));
  const interrupt = await jp('POST', `/api/kernels/${id}/interrupt`, {});
  t.equal(interrupt.status, 204, interrupt.text);
  const stopped = await long;
  t.equal(stopped.reply.content.status, 'error');
  t.equal(stopped.error?.ename, 'KeyboardInterrupt');
  await new Promise((ok) => setTimeout(ok, 2000));
  const tracker = await client.execute('st = sc.statusTracker()\nprint(len(st.getActiveStageIds()), len(st.getActiveJobsIds()), max(st.getJobIdsForGroup(None)) and st.getJobInfo(max(st.getJobIdsForGroup(None))).status)');
  t.equal(tracker.stdout.trim(), '0 0 FAILED', 'no stage or job runs 2 s later; the job was cancelled');

  // Restart: same id, same socket, `restarting` then `idle`, a fresh namespace, Spark kept.
  await client.execute('x = 42');
  const beforeRestart = client.messages.length;
  const restart = await jp('POST', `/api/kernels/${id}/restart`, {});
  t.equal(restart.status, 200, restart.text);
  t.equal(restart.json.id, id, 'the kernel keeps its id');
  const states = () => client.messages.slice(beforeRestart).filter((m) => m.header.msg_type === 'status' && !m.parent_header.msg_id).map((m) => m.content.execution_state);
  await client.waitFor((m) => m.header.msg_type === 'status' && m.content.execution_state === 'idle' && !m.parent_header.msg_id, 30_000, beforeRestart);
  t.same(states().slice(0, 2), ['restarting', 'idle'], 'restarting, then idle, on the same websocket');
  const gone = await client.execute('x');
  t.equal(gone.error?.ename, 'NameError', 'the namespace is fresh');
  t.equal((await client.execute('sc.parallelize(range(10)).count()')).result, '10', 'sc works after the restart');

  // Shut down: the application is stopped and removed.
  const deleted = await jp('DELETE', `/api/kernels/${id}`);
  t.equal(deleted.status, 204, deleted.text);
  t.equal((await api('GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`)).json.items.length, 0, 'the application is gone');
  t.notOk((await jp('GET', '/api/kernels')).json.find((k: { id: string }) => k.id === id), 'and the kernel');
});
