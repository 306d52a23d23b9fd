// Acceptance, local mode, real parts only: `submission-service local --auth on`, a real
// `jupyter server` pointed at its /notebooks with a user key, a real ipykernel and pyspark in
// the driver. Through the Jupyter server's own REST API and websocket: start a kernel from a
// template, use sc / sqlContext / spark, interrupt a running Spark job, restart, shut down.
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { KernelClient, keyedDataDir, startJupyter, toolsEnv } from './jupyter.js';
import { interruptStopsSparkJob, restartKeepsKernel } from './kernel-lifecycle.js';

const skip = !realSpark() || !toolsEnv() ? 'needs the Spark and tools virtualenvs' : false;

t.test('a stock jupyter server runs Spark cells on a template kernel', { skip, timeout: 600_000 }, async (t) => {
  const { root, dataDir, key, admin } = keyedDataDir(t, 'jupyter');
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
  t.comment(`POST /api/kernels answered in ${Date.now() - started} ms (it does not wait for the kernel to start)`);
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
  t.notMatch(sum.stderr, /\[launcher\]/, "the launcher's own lines (Spark ready …) stay out of the first cell: they go to the driver's log");
  const sql = await client.execute('sqlContext.sql("select 1 as x").collect()');
  t.equal(sql.result, '[Row(x=1)]');
  const count = await client.execute('spark.range(10).count()');
  t.equal(count.result, '10');
  const busyFirst = client.messages.findIndex((m) => m.header.msg_type === 'status');
  t.equal(client.messages[busyFirst]?.content.execution_state, 'busy', 'iopub said busy while the driver started');

  // Interrupt a long Spark job: the cell stops and so do its tasks. Then restart.
  await interruptStopsSparkJob(t, client, jp, id);
  await restartKeepsKernel(t, client, jp, id);

  // Shut down: the application is stopped and removed.
  const deleted = await jp('DELETE', `/api/kernels/${id}`);
  t.equal(deleted.status, 204, deleted.text);
  t.equal((await api('GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`)).json.items.length, 0, 'the application is gone');
  t.notOk((await jp('GET', '/api/kernels')).json.find((k: { id: string }) => k.id === id), 'and the kernel');
});
