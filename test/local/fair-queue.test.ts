// Local mode's core queue is fair between submitters (cluster/local/fair-queue.ts): the pure
// queue on its own, then the real LocalCluster with two keys on one core, where a flood of one
// key no longer puts the other's application behind all of it.
import t from 'tap';
import { coresWithinShare, FairQueue, keyCoreLimit } from '../../cluster/local/fair-queue.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

/** Starts the queue's heads one after another, as the scheduler would with one core each. */
function drain(queue: FairQueue, usage: (who: string | null) => number = () => 0): string[] {
  const order: string[] = [];
  for (let head = queue.head(usage); head !== undefined; head = queue.head(usage)) {
    queue.remove(head, true);
    order.push(head);
  }
  return order;
}

t.test('turns alternate between submitters; each one first come first served', async (t) => {
  const queue = new FairQueue();
  for (let i = 1; i <= 4; i++) queue.push(`a${i}`, 'A', `2026-01-01T00:00:0${i}Z`);
  queue.push('b1', 'B', '2026-01-01T00:00:05Z');
  queue.push('b2', 'B', '2026-01-01T00:00:06Z');
  queue.push('anon1', null, '2026-01-01T00:00:07Z');
  t.equal(queue.size, 7);
  t.same(drain(queue), ['a1', 'b1', 'anon1', 'a2', 'b2', 'a3', 'a4'], 'round robin, in each submitter\'s own order');
  t.equal(queue.size, 0);
});

t.test('the submitter holding the fewest cores goes first', async (t) => {
  const queue = new FairQueue();
  queue.push('a1', 'A', '1');
  queue.push('b1', 'B', '2');
  const held: Record<string, number> = { A: 6, B: 2 };
  t.equal(queue.head((who) => held[who!] ?? 0), 'b1', 'B holds fewer cores, although A came first');
  held.B = 6;
  t.equal(queue.head((who) => held[who!] ?? 0), 'a1', 'equal shares: the earlier');
});

t.test('a submitter served just before it queued again waits for the others', async (t) => {
  const queue = new FairQueue();
  queue.push('a1', 'A', '1');
  queue.remove('a1', true); // started: A's queue is empty now
  queue.push('a2', 'A', '2');
  queue.push('b1', 'B', '3');
  t.equal(queue.head(() => 0), 'b1', 'B has not had a turn yet');
});

t.test('an application back in the queue keeps its place; removing unserved keeps the turn', async (t) => {
  const queue = new FairQueue();
  queue.push('a1', 'A', '1');
  queue.push('a3', 'A', '3');
  queue.push('a2', 'A', '2'); // a requeue: placed by its creation time
  queue.push('a2', 'A', '2'); // twice is once
  queue.push('b1', 'B', '4');
  t.same(queue.all(), ['a1', 'a2', 'a3', 'b1']);
  t.ok(queue.remove('a1'), 'a stop of a waiting application');
  t.notOk(queue.remove('a1'), 'gone already');
  t.notOk(queue.has('a1'));
  t.same(drain(queue), ['a2', 'b1', 'a3'], 'A was not served by the removal: its turn is still first');
});

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

t.test('a key holds at most its share of the cores; an application larger than the share runs with the share', async (t) => {
  t.equal(keyCoreLimit(8, 0.5), 4);
  t.equal(keyCoreLimit(3, 0.5), 1, 'rounded down');
  t.equal(keyCoreLimit(1, 0.5), 1, 'at least one core');
  t.equal(keyCoreLimit(8, 0), undefined, '0: no share');
  t.equal(keyCoreLimit(8, 1), undefined, '1: the whole machine, no share');
  t.equal(coresWithinShare('A', 2, 0, 4), 2, 'within the share: what it asks for');
  t.equal(coresWithinShare('A', 2, 2, 4), 2, 'up to the share');
  t.equal(coresWithinShare('A', 1, 4, 4), undefined, 'the share used up: it waits');
  t.equal(coresWithinShare('A', 8, 0, 4), 4, 'larger than the share: started with the share');
  t.equal(coresWithinShare('A', 8, 1, 4), undefined, 'and only once the key holds nothing more than fits');
  t.equal(coresWithinShare(null, 8, 8, 4), 8, 'anonymous (authentication off, one person): no share');
  t.equal(coresWithinShare('A', 8, 8, undefined), 8, 'no share set');
});

t.test('the queue passes over a submitter at its share to the next one', async (t) => {
  const queue = new FairQueue();
  queue.push('a1', 'A', '1');
  queue.push('b1', 'B', '2');
  const held: Record<string, number> = { A: 0, B: 1 };
  const atShare = new Set<string>();
  const mayStart = (who: string | null) => !atShare.has(who!);
  t.equal(queue.head((who) => held[who!] ?? 0, mayStart), 'a1', 'A holds fewer cores');
  atShare.add('A');
  t.equal(queue.head((who) => held[who!] ?? 0, mayStart), 'b1', 'A at its share: B\'s turn although it holds more');
  atShare.add('B');
  t.equal(queue.head((who) => held[who!] ?? 0, mayStart), undefined, 'nobody may start');
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
