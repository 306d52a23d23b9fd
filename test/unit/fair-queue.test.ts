// Local mode's queue for cores (cluster/local/fair-queue.ts), pure: turns between submitters,
// each one's own order, and a key's share of the cores. No process, no clock.
import t from 'tap';
import { coresWithinShare, FairQueue, keyCoreLimit } from '../../cluster/local/fair-queue.js';

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
