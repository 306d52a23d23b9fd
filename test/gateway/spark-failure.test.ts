// A SparkSession that cannot start (a serializer class that does not exist) reaches the
// notebook at once as an error on iopub; the kernel itself keeps working and `sc` raises a
// clear error instead of waiting; printing the placeholder never blocks.
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('a Spark start failure is shown in the notebook', { skip, timeout: 300_000 }, async (t) => {
  const service = await startService(t, { dataDir: join(tempDir(t), 'data'), env: sparkEnv() });
  const template = await http(service.url, 'POST', '/api/config-templates/', {
    name: 'broken-spark', config: { pythonVersion: '3', engineConf: { 'spark.serializer': 'org.example.NoSuchSerializer' } },
  });
  t.equal(template.status, 201, template.text);
  const created = await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'broken-spark' });
  t.equal(created.status, 201, created.text);
  const client = await new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${created.json.id}/channels`).open(t);
  const failure = await client.waitFor((m) => m.header.msg_type === 'stream' && /Spark failed to start/.test(String(m.content.text)), 180_000);
  t.match(failure.content.text, /NoSuchSerializer|ClassNotFound/, 'the reason is shown');
  t.equal((await client.execute('6 * 7')).result, '42', 'the kernel works');
  const shown = await client.execute('repr(sc)', 120_000);
  t.match(shown.result, /failed to start/, 'printing the placeholder answers at once');
  const used = await client.execute('sc.parallelize([1]).count()', 120_000);
  t.equal(used.error?.ename, 'RuntimeError');
  t.match(used.error?.evalue, /Spark failed to start/, 'using it raises a clear error');
  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${created.json.id}`)).status, 204);
});
