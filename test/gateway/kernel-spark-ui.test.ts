// A local kernel starts Python first (pyspark starts the JVM from PYSPARK_SUBMIT_ARGS): its
// driver still serves the Spark UI on the port local mode gave it, under the dashboard's
// proxy base, and the dashboard's proxy reaches it. Real ipykernel and pyspark.
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test("a Python-first kernel's Spark UI opens through the dashboard's proxy", { skip, timeout: 300_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--cores', '2'] });
  t.equal((await http(service.url, 'POST', '/api/config-templates/', { name: 'notebook', config: { pythonVersion: '3' } })).status, 201);
  const created = await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'notebook' });
  t.equal(created.status, 201, created.text);
  const client = await new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${created.json.id}/channels`).open(t);
  t.equal((await client.execute('sc.parallelize(range(10)).count()', 180_000)).result, '10');
  const proxyBase = (await client.execute("sc.getConf().get('spark.ui.proxyBase')")).result;
  const [app] = (await http(service.url, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${created.json.id}`)).json.items;
  t.equal(proxyBase, `'/dashboard/apps/${app.appName}/spark-ui'`, 'the proxy base reached the driver through PYSPARK_SUBMIT_ARGS');
  t.equal((await client.execute("sc.getConf().get('spark.master')")).result, "'local[2]'", 'and the master local mode chose');
  const jobs = await fetch(`${service.url}/dashboard/apps/${app.appName}/spark-ui/jobs/`);
  t.equal(jobs.status, 200, 'the Spark UI answers through the dashboard');
  t.match(await jobs.text(), `/dashboard/apps/${app.appName}/spark-ui/`, 'its links are under the proxy path');
  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${created.json.id}`)).status, 204);
});
