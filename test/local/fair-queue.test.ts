// Local mode's core queue is fair between submitters (cluster/local/fair-queue.ts): the real
// LocalCluster with two keys on one core, where a flood of one key no longer puts the other's
// application behind all of it, and a key's share of the cores. The pure queue has its unit
// tests (test/unit/fair-queue.test.ts).
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

t.test('local mode: a flood of one key does not queue another key behind it', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const a = keys.create('user', 'A');
  const b = keys.create('user', 'B');
  // One core: everything after the first application waits for it.
  const api = await startTestApi(t, { cores: 1, auth: { enabled: true, store: keys } });
  const submit = async (key: string, directives: Parameters<typeof fakeJob>[0] = {}) => {
    const res = await api.call('POST', '/api/apps/', { jobName: 'fair', configOverrides: { ...fakeJob(directives), executor: { cores: 1 } } }, { 'x-api-key': key });
    t.equal(res.status, 201, res.body);
    return res.json.appName as string;
  };
  const holder = await submit(a.key, { sleep: 1 });
  const flood = [await submit(a.key), await submit(a.key), await submit(a.key), await submit(a.key)];
  const other = await submit(b.key);
  const read = (name: string) => api.call('GET', `/api/apps/${name}`, undefined, { 'x-api-key': a.key }).then((r) => r.json);
  await waitForState(() => read(other), 'COMPLETED', { timeoutMs: 60_000 });
  for (const name of [holder, ...flood]) await waitForState(() => read(name), 'COMPLETED', { timeoutMs: 60_000 });
  const started = async (name: string) => (await read(name)).startedAt as string;
  const order = (await Promise.all([holder, ...flood, other].map(async (name) => ({ name, at: await started(name) }))))
    .sort((x, y) => x.at.localeCompare(y.at) || x.name.localeCompare(y.name)).map((x) => x.name);
  t.equal(order.indexOf(other), 1, `B's application runs right after the one that held the core, not behind A's ${flood.length} (order: ${order.join(' ')})`);
});

t.test('local mode: one key takes half the cores, another key starts on the rest at once', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const a = keys.create('user', 'A');
  const b = keys.create('user', 'B');
  const api = await startTestApi(t, { cores: 2, auth: { enabled: true, store: keys }, local: { keyCoreShare: 0.5 } });
  const submit = async (key: string, cores: number) => {
    const res = await api.call('POST', '/api/apps/', { jobName: 'share', configOverrides: { ...fakeJob({ sleep: 60 }), executor: { cores, instances: 1 } } }, { 'x-api-key': key });
    t.equal(res.status, 201, res.body);
    return res.json.appName as string;
  };
  const state = async (name: string) => (await api.cluster.get(name))?.state;
  // The queue decides as each submission lands: states right after the POST are its decisions.
  const big = await submit(a.key, 2);
  t.equal(await state(big), 'RUNNING', 'A\'s first application starts');
  const log = () => api.call('GET', `/api/apps/${big}/log`, undefined, { 'x-api-key': a.key }).then((r) => r.body);
  await until(async () => /master=/.test(await log()), { timeoutMs: 60_000 });
  t.match(await log(), /master=local\[1\]/, 'asking for 2 cores, it runs with its key\'s share: 1');
  const second = await submit(a.key, 1);
  t.equal(await state(second), 'PENDING', 'A\'s second waits although a core is free: A holds its share');
  const other = await submit(b.key, 1);
  t.equal(await state(other), 'RUNNING', 'B starts at once on the core A may not take');
  await api.call('DELETE', `/api/apps/${big}`, undefined, { 'x-api-key': a.key });
  await waitForState(async () => (await api.cluster.get(second))!, 'RUNNING', { timeoutMs: 60_000 });
  t.pass('A\'s second starts once its first is gone');
});
