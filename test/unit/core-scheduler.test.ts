// Local mode's scheduling loop (cluster/local/core-scheduler.ts) over applications held in a map:
// what starts when cores free, in the fair queue's order, interactive applications at once and
// outside the batch cores but inside their key's share, a key's share, a stopped application
// passed over. No process, no clock.
import t from 'tap';
import { CoreScheduler, type SchedulingView } from '../../cluster/local/core-scheduler.js';

/** Applications by name, and what the scheduler started, in order, with its cores. */
function machine(cores: number, keyCoreShare = 0) {
  const apps = new Map<string, SchedulingView>();
  const started: string[] = [];
  let closed = false;
  const scheduler = new CoreScheduler(cores, keyCoreShare, {
    app: (name) => apps.get(name),
    start: (name, n) => {
      started.push(`${name}:${n}`);
      apps.get(name)!.state = 'RUNNING';
    },
    closed: () => closed,
  });
  let at = 0;
  const submit = (name: string, submittedBy: string | null, demand = 1, interactive = false) => {
    apps.set(name, { state: 'PENDING', submittedBy, createdAt: String(++at).padStart(4, '0'), demand, interactive });
    scheduler.requeue(name);
  };
  /** The driver ended: its cores are free, and the next ones start. */
  const end = (name: string) => {
    apps.get(name)!.state = 'COMPLETED';
    scheduler.release(name);
    scheduler.schedule();
  };
  return { apps, started, scheduler, submit, end, close: () => { closed = true; } };
}

t.test('batch applications start while their cores fit, the rest as cores free, fair between keys', async (t) => {
  const m = machine(2);
  m.submit('a1', 'A');
  m.submit('a2', 'A');
  m.submit('a3', 'A');
  m.submit('b1', 'B');
  t.same(m.started, ['a1:1', 'a2:1'], 'two cores: the first two start, the others wait');
  m.end('a1');
  t.same(m.started.slice(2), ['b1:1'], 'a core free: B (holding none) before A\'s third, which came first');
  m.end('a2');
  t.same(m.started.slice(3), ['a3:1']);
});

t.test('an application larger than the machine starts alone on an idle machine, and waits while anything runs', async (t) => {
  const m = machine(2);
  m.submit('small', 'A');
  m.submit('big', 'B', 4);
  t.same(m.started, ['small:1'], 'the big one waits for the machine to be idle');
  m.end('small');
  t.same(m.started, ['small:1', 'big:4'], 'then runs with what it asked for');
});

t.test('interactive applications start at once and hold none of the batch cores', async (t) => {
  const m = machine(1);
  m.submit('batch', 'A');
  m.submit('kernel', 'A', 1, true);
  m.submit('batch2', 'B');
  t.same(m.started, ['batch:1', 'kernel:1'], 'the kernel starts although the core is taken; batch2 waits');
  m.end('kernel');
  t.same(m.started, ['batch:1', 'kernel:1'], 'the kernel freed no batch core');
  m.end('batch');
  t.same(m.started.slice(2), ['batch2:1']);
});

t.test('a key at its share waits; an application asking more than the share runs with the share', async (t) => {
  const m = machine(4, 0.5);
  m.submit('a-big', 'A', 4);
  m.submit('a-next', 'A');
  m.submit('b1', 'B');
  t.same(m.started, ['a-big:2', 'b1:1'], 'A gets its share (2 of 4); its next waits although a core is free; B starts');
  m.end('a-big');
  t.same(m.started.slice(2), ['a-next:1']);
});

t.test('kernels hold their cores in their key\'s share: its next kernel and its batch applications wait, another key starts', async (t) => {
  const m = machine(4, 0.5);
  m.submit('a-kernel', 'A', 4, true);
  t.same(m.started, ['a-kernel:2'], 'a kernel asking for the machine runs with its key\'s share (2 of 4)');
  t.equal(m.scheduler.shareRefusal('a-kernel'), undefined, 'it started: nothing to refuse');
  m.submit('a-kernel2', 'A', 1, true);
  m.submit('a-batch', 'A');
  t.same(m.started, ['a-kernel:2'], 'A\'s second kernel and its batch application wait, although two cores are free');
  t.match(m.scheduler.shareRefusal('a-kernel2'), /holds 2 of the 2 cores its share of local mode allows \(--key-core-share 0\.5 of 4 cores; its kernels count/, 'the kernel that waits has a reason to refuse it with');
  t.equal(m.scheduler.shareRefusal('a-batch'), undefined, 'a batch application is not refused: it waits its turn');
  m.submit('b-batch', 'B', 2);
  t.same(m.started, ['a-kernel:2', 'b-batch:2'], 'B starts on the cores A may not take');
  m.end('a-kernel');
  t.same(m.started.slice(2), ['a-kernel2:1', 'a-batch:1'], 'A\'s kernel ended: its waiting kernel and batch application start within its share');
});

t.test('a warm pool\'s kernel counts in nobody\'s share until claimed, then in its claimer\'s', async (t) => {
  const m = machine(4, 0.5);
  const pool = (name: string) => {
    m.apps.set(name, { state: 'PENDING', submittedBy: 'gateway', createdAt: name, demand: 2, interactive: true, holder: null });
    m.scheduler.requeue(name);
  };
  m.submit('gateway-kernel', 'gateway', 2, true);
  pool('pooled1');
  pool('pooled2');
  t.same(m.started, ['gateway-kernel:2', 'pooled1:2', 'pooled2:2'], 'the pool fills although the gateway\'s key holds its share');
  m.apps.get('pooled1')!.holder = 'A'; // claimed by A
  m.submit('a-batch', 'A');
  t.same(m.started.length, 3, 'A holds its share through the kernel it claimed: its application waits');
  m.submit('b-batch', 'B');
  t.same(m.started.slice(3), ['b-batch:1'], 'B\'s starts');
  m.end('pooled1');
  t.same(m.started.slice(4), ['a-batch:1'], 'the claimed kernel ended: A\'s application starts');
});

t.test('without a share (anonymous, or none set) kernels start at once as before', async (t) => {
  const anonymous = machine(2, 0.5);
  for (const name of ['k1', 'k2', 'k3']) anonymous.submit(name, null, 2, true);
  t.same(anonymous.started, ['k1:2', 'k2:2', 'k3:2'], 'authentication off: one person, no share');
  const none = machine(2);
  for (const name of ['k1', 'k2']) none.submit(name, 'A', 2, true);
  t.same(none.started, ['k1:2', 'k2:2'], '--key-core-share 0');
  t.equal(none.scheduler.shareRefusal('k2'), undefined);
});

t.test('a stopped application is passed over and dropped; a removed one keeps its submitter\'s turn', async (t) => {
  const m = machine(1);
  m.submit('holder', 'A');
  m.submit('a2', 'A');
  m.submit('b1', 'B');
  m.apps.get('b1')!.state = 'KILLED';
  m.scheduler.remove('a2');
  m.end('holder');
  t.same(m.started, ['holder:1'], 'nothing left to start: a2 removed, b1 stopped');
  t.notOk(m.scheduler.has('b1'), 'the stopped one is out of the queue');
  m.scheduler.requeue('a2');
  t.same(m.started, ['holder:1', 'a2:1'], 'back in the queue, it starts');
});

t.test('nothing starts once the cluster is closing; a driver found after a restart holds its cores', async (t) => {
  const m = machine(2);
  m.scheduler.hold('found', 2, false);
  m.submit('a1', 'A');
  t.same(m.started, [], 'the re-attached driver holds both cores');
  m.close();
  m.scheduler.release('found');
  m.scheduler.schedule();
  t.same(m.started, [], 'closing: no start');
});
