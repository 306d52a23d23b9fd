// A warm pool's kernel is submitted with the gateway's key but belongs to the key that claims it
// (issue 17): the claim is recorded on its application (kernel.submission-service.io/claimed-by,
// set by the API on the gateway's claim), so the claimer opens its Spark UI and reads its log,
// and another user key still cannot. `submission-service local --auth on --warm-pool`, real
// ipykernel and pyspark; keys A (claimer), B and an admin.
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { until } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { join } from 'node:path';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;
const CLAIMER = 'kernel.submission-service.io/claimed-by';

t.test('the claimer of a warm pool\'s kernel opens its Spark UI; another key does not', { skip, timeout: 600_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const store = new FileKeyStore(dataDir);
  const a = store.create('user', 'A');
  const b = store.create('user', 'B');
  const admin = store.create('admin', 'admin').key;
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--warm-pool', 'notebook=1', '--cores', '2'] });
  const api = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    http(service.url, method, path, body, { 'x-api-key': key, ...headers });
  const template = await api(admin, 'POST', '/api/config-templates/', { name: 'notebook', config: { pythonVersion: '3' } });
  t.equal(template.status, 201, template.text);
  const poolReady = async () => ((await http(service.url, 'GET', '/notebooks/api/warm-pool', undefined, { authorization: `token ${a.key}` })).json.pools as Array<{ template: string; ready: number }>)
    .find((p) => p.template === 'notebook')?.ready === 1;
  await until(poolReady, { timeoutMs: 300_000, intervalMs: 250, what: 'a ready kernel in the pool' });

  const created = await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'notebook' }, { authorization: `token ${a.key}` });
  t.equal(created.status, 201, created.text);
  const [app] = (await api(a.key, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${created.json.id}`)).json.items as Array<{ appName: string; submittedBy: string; labels: Record<string, string> }>;
  t.equal(app.labels['kernel.submission-service.io/pool'], 'notebook', 'A got the pool\'s kernel');
  t.not(app.submittedBy, a.id, 'submitted with the gateway\'s key');
  t.equal(app.labels[CLAIMER], a.id, 'and recorded as claimed by A');

  const ui = (key: string) => fetch(`${service.url}/dashboard/apps/${app.appName}/spark-ui/jobs/`, { headers: { 'x-api-key': key } });
  const ofA = await ui(a.key);
  t.equal(ofA.status, 200, 'A opens its Spark UI');
  t.match(await ofA.text(), /Spark Jobs/);
  const ofB = await ui(b.key);
  t.equal(ofB.status, 403, 'B does not');
  t.notMatch(await ofB.text(), /Spark Jobs/);
  t.equal((await ui(admin)).status, 200, 'an admin does');
  t.equal((await api(a.key, 'GET', `/api/apps/${app.appName}/log`)).status, 200, 'A reads its log');
  t.equal((await api(b.key, 'GET', `/api/apps/${app.appName}/log`)).status, 403, 'B does not');
  t.equal((await api(b.key, 'POST', `/api/apps/${app.appName}/stop`)).status, 403, 'nor stops it');

  // Only the gateway records claims, and no submission carries the label.
  const claimedByB = await api(b.key, 'POST', `/api/apps/${app.appName}/claim`);
  t.equal(claimedByB.status, 403, claimedByB.text);
  t.equal((await api(a.key, 'GET', `/api/apps/${app.appName}`)).json.labels[CLAIMER], a.id, 'still A\'s');
  const labelled = await api(b.key, 'POST', '/api/apps/', { jobName: 'mine', labels: { [CLAIMER]: b.id }, configOverrides: { type: 'Python', mainApplicationFile: 'local:///bin/true' } });
  t.equal(labelled.status, 400, labelled.text);

  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${created.json.id}`, undefined, { authorization: `token ${a.key}` })).status, 204, 'A shuts it down');
  t.equal((await api(admin, 'GET', `/api/apps/${app.appName}`)).status, 404, 'its application is gone');
});
