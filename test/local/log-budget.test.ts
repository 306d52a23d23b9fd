// The driver logs' total budget (cluster/local/log-budget.ts): the decision as a pure function,
// with made-up sizes and end times, and the in-place shrinking and replacing it asks for
// (log-budget-files.ts) on small temp files. No service, no waits.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { type LogOnDisk, NOTE_ROOM, planLogBudget, shrunkBytes } from '../../cluster/local/log-budget.js';
import { dropLog, LogBudget, shrinkLog } from '../../cluster/local/log-budget-files.js';
import type { StoredApp } from '../../cluster/local/record-store.js';
import { tempDir } from '../helpers/temp.js';

const MiB = 1024 * 1024;
const ended = (appName: string, bytes: number, endedAt: string): LogOnDisk => ({ appName, bytes, endedAt });
const running = (appName: string, bytes: number, granted: number): LogOnDisk => ({ appName, bytes, granted, endedAt: '2026-11-29T12:00:00Z' });

t.test('room enough: the whole cap, nothing touched', async (t) => {
  t.same(planLogBudget(10 * MiB, [ended('a', 2 * MiB, '2026-11-29T10:00:00Z')], 4 * MiB), { cap: 4 * MiB, shrink: [], drop: [] });
  t.same(planLogBudget(10 * MiB, [], 4 * MiB), { cap: 4 * MiB, shrink: [], drop: [] }, 'an empty data dir');
});

t.test('the oldest ended run\'s log is shrunk first, and only as many as the start needs', async (t) => {
  const logs = [
    ended('newest', 3 * MiB, '2026-11-29T11:00:00Z'),
    ended('oldest', 3 * MiB, '2026-11-29T09:00:00Z'),
    ended('middle', 3 * MiB, '2026-11-29T10:00:00Z'),
  ];
  const plan = planLogBudget(10 * MiB, logs, 3 * MiB);
  t.same(plan, { cap: 3 * MiB, shrink: ['oldest'], drop: [] }, 'one shrink gives room for one cap');
  t.same(planLogBudget(8 * MiB, logs, 3 * MiB).shrink, ['oldest', 'middle'], 'then the next oldest');
});

t.test('a running driver holds its whole grant, whatever it wrote so far; it is never touched', async (t) => {
  const logs = [running('busy', 1024, 4 * MiB), ended('old', 4 * MiB, '2026-11-29T09:00:00Z')];
  const plan = planLogBudget(8 * MiB, logs, 2 * MiB);
  t.same(plan.shrink, ['old'], 'room comes from the ended log, not from the running one\'s unwritten grant');
  t.equal(plan.cap, 2 * MiB);
  t.same(planLogBudget(8 * MiB, [running('loud', 9 * MiB, MiB)], MiB).cap, 0, 'one that wrote past its grant (before a budget) holds what it wrote');
});

t.test('when every ended log is shrunk, the oldest are replaced by a note', async (t) => {
  const logs = Array.from({ length: 10 }, (_, i) => ended(`app-${i}`, shrunkBytes(), `2026-11-29T0${i}:00:00Z`));
  const budget = 10 * shrunkBytes() + 64 * 1024;
  // Each note gives back a shrunk log less NOTE_ROOM (64 KiB): 192 KiB and its notes need three.
  const plan = planLogBudget(budget, logs, 192 * 1024);
  t.same(plan.shrink, [], 'already as small as shrinking makes them');
  t.same(plan.drop, ['app-0', 'app-1', 'app-2'], 'the oldest three give the room, the newest stay readable');
  t.equal(plan.cap, 192 * 1024);
});

t.test('a log dropped is not also shrunk, and a note is never dropped again', async (t) => {
  const logs = [ended('big', 8 * MiB, '2026-11-29T01:00:00Z'), ended('note', 200, '2026-11-29T00:00:00Z')];
  const plan = planLogBudget(MiB, logs, MiB);
  t.same(plan.drop, ['big']);
  t.same(plan.shrink, []);
});

t.test('running drivers holding the budget: the start gets what is left, possibly nothing, and runs', async (t) => {
  const grant = 3 * MiB + NOTE_ROOM;
  t.equal(planLogBudget(8 * MiB, [running('a', 0, grant)], 3 * MiB).cap, 3 * MiB, 'room for one more');
  const left = planLogBudget(8 * MiB, [running('a', 0, grant), running('b', 0, grant)], 3 * MiB).cap;
  t.equal(left, 8 * MiB - 2 * grant - NOTE_ROOM, 'what the two leave');
  t.equal(planLogBudget(8 * MiB, [running('a', 0, 4 * MiB), running('b', 0, 4 * MiB)], 3 * MiB).cap, 0, 'none left: a cap of 0, not a refusal');
});

t.test('the budget holds over a run of starts and ends (a made-up clock)', async (t) => {
  const budget = 6 * MiB;
  const cap = 2 * MiB;
  let logs: LogOnDisk[] = [];
  for (let i = 0; i < 40; i++) {
    const minute = String(i).padStart(2, '0');
    const plan = planLogBudget(budget, logs, cap);
    // Do what it says: shrink, drop; then the new run writes its whole grant and ends.
    logs = logs.map((log) => plan.drop.includes(log.appName) ? { ...log, bytes: NOTE_ROOM } : plan.shrink.includes(log.appName) ? { ...log, bytes: shrunkBytes() } : log);
    logs.push(ended(`run-${minute}`, plan.cap + NOTE_ROOM, `2026-11-29T12:${minute}:00Z`));
    const total = logs.reduce((sum, log) => sum + log.bytes, 0);
    if (total > budget) t.fail(`over the budget after run ${i}: ${total}`);
    t.equal(plan.cap, cap, `run ${i} got its whole cap`);
  }
  t.equal(logs.at(-1)!.bytes, cap + NOTE_ROOM, 'the newest log is whole');
});

t.test('shrinking in place keeps the head, a note and the tail; replacing leaves the note', async (t) => {
  const dir = tempDir(t, 'subsvc-log-budget-');
  const file = join(dir, 'a.log');
  const lines = Array.from({ length: 2000 }, (_, i) => `line ${String(i).padStart(4, '0')}\n`).join('');
  writeFileSync(file, lines);
  shrinkLog(file, 100, (removed) => `\n[removed ${removed}]\n`);
  const shrunk = readFileSync(file, 'utf8');
  t.equal(shrunk, `${lines.slice(0, 100)}\n[removed ${lines.length - 200}]\n${lines.slice(-100)}`);
  t.equal(statSync(file).size, Buffer.byteLength(shrunk), 'cut to its new end');
  shrinkLog(file, 100, (removed) => `\n[removed ${removed}]\n`);
  t.equal(readFileSync(file, 'utf8'), shrunk, 'a shrunk log is left as it is');
  dropLog(file, '[gone]\n');
  t.equal(readFileSync(file, 'utf8'), '[gone]\n');
});

t.test('the files: an ended run\'s log is measured once, and again only after the budget changed it', async (t) => {
  const dir = tempDir(t);
  const logFile = (appName: string) => join(dir, `${appName}.log`);
  const logger = { info: () => {}, warn: () => {}, error: () => {} } as never;
  const budget = new LogBudget({ budget: 4 * MiB, cap: MiB, logFile, logger });
  const app = (appName: string, state: 'COMPLETED' | 'PENDING', endedAt?: string) =>
    ({ record: { appName, state, createdAt: '2026-11-29T09:00:00Z', endedAt }, pod: {} }) as unknown as StoredApp;
  writeFileSync(logFile('old'), 'x'.repeat(MiB));
  const apps = [app('old', 'COMPLETED', '2026-11-29T10:00:00Z'), app('next', 'PENDING')];
  t.equal(budget.grant('next', apps), MiB, 'room for the whole cap');
  // Written behind the budget's back (nothing does that but this test): not measured again.
  writeFileSync(logFile('old'), 'x'.repeat(3 * MiB));
  t.equal(budget.grant('next', apps), MiB, "the ended log's size measured before stands");
  t.equal(statSync(logFile('old')).size, 3 * MiB, 'and it was left as it is');
  // Gone from the records (deleted): forgotten, so measured afresh if a run of that name comes back.
  t.equal(budget.grant('next', [apps[1]]), MiB);
  t.equal(budget.grant('next', apps), MiB, 'the whole cap again');
  t.ok(statSync(logFile('old')).size <= shrunkBytes(), 'after the old log, measured again at 3 MiB, was shrunk to make room for it');
  // Changed by the budget: measured again, not taken for 3 MiB any more.
  t.equal(budget.grant('next', apps), MiB);
  t.ok(statSync(logFile('old')).size <= shrunkBytes(), 'nothing more to shrink');
});
