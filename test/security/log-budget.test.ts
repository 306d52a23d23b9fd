// Driver logs cannot fill the records' filesystem (issue 25 audit gap 2): each log had a cap, but
// all of them lay in <data dir>/logs with no total bound, so enough apps filled the disk the
// records need (a 507 for everyone). The real `submission-service local` as root with the
// sandbox and two user keys, its data dir on a 16 MiB tmpfs of its own, `--log-cap 3MiB
// --log-budget 6MiB`. Key A's drivers (a plain Python main file run by a stand-in spark-submit,
// no JVM) each write 5 MiB to stdout: four that end at once, then two that wait. Without the
// budget their logs take 18 MiB, more than the filesystem. With it: the logs never pass the
// budget, key B submits and its run is recorded to the end while A's running drivers hold the
// whole budget, the newest logs read whole (head, cap note, tail), and the oldest say, when read,
// that they were removed to keep the budget.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { until, waitForState } from '../helpers/poll.js';
import { smallDataFs, twoUsersOnSmallFs } from '../helpers/small-data-fs.js';

const canMount = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;
const skip = canMount ? false : 'needs root (mount) and bubblewrap';
const MiB = 1024 * 1024;
const BUDGET = 6 * MiB;
const CAP = 3 * MiB;

const FLOOD = `import os, sys, time
tag = sys.argv[1]
print('FLOOD FIRST LINE', tag, flush=True)
line = 'x' * 1023 + '\\n'
for i in range(5 * 1024):
    sys.stdout.write(line)
sys.stdout.write('FLOOD LAST LINE %s\\n' % tag)
sys.stdout.flush()
if len(sys.argv) > 2:
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.2)
`;

/** Bytes of the drivers' logs in the data dir (the History Server's own log is not a driver's). */
function driverLogBytes(dataDir: string): number {
  const dir = join(dataDir, 'logs');
  return readdirSync(dir).filter((name) => name !== 'history-server.log').reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

t.test('many drivers\' logs stay within the budget: records are written, another key runs, the newest logs read whole', { skip, timeout: 600_000 }, async (t) => {
  const disk = smallDataFs(t, 16, { 'flood.py': FLOOD, 'ok.py': "print('OK RAN', flush=True)\n" });
  const { fs, dataDir, release } = disk;
  const { a, b, submit } = await twoUsersOnSmallFs(t, disk, ['--cores', '3', '--key-core-share', '0', '--log-cap', '3MiB', '--log-budget', '6MiB'], 'logs');
  const ended = (call: typeof a, name: string) => waitForState(async () => (await call('GET', `/api/apps/${name}`)).json as { state: string; stateDetail?: string }, ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 });
  const logOf = async (call: typeof a, name: string) => {
    const res = await call('GET', `/api/apps/${name}/log`);
    t.equal(res.status, 200, `${name}'s log answers`);
    return res.text;
  };
  const withinBudget = (when: string) => {
    const bytes = driverLogBytes(dataDir);
    // Past the budget by at most the few notes of a log granted nothing (log-budget.ts).
    t.ok(bytes <= BUDGET + 2048, `${when}: the drivers' logs take ${bytes} bytes, within the budget of ${BUDGET}`);
  };

  // Four runs of A that end at once, one after the other: 12 MiB of logs without the budget.
  const done: string[] = [];
  for (const tag of ['f1', 'f2', 'f3', 'f4']) {
    const name = await submit(a, 'flood.py', [tag]);
    t.equal((await ended(a, name)).state, 'COMPLETED', `${tag} ran to the end`);
    done.push(name);
    withinBudget(`after ${tag}`);
  }
  const newest = await logOf(a, done[3]!);
  t.match(newest, /FLOOD FIRST LINE f4/, 'the newest ended log: its head');
  t.match(newest, /reached its cap of 3 MiB/, 'its cap note');
  t.match(newest, /FLOOD LAST LINE f4/, 'and its tail');

  // Two of A's that keep running: between them they hold the whole budget.
  const waiting = [await submit(a, 'flood.py', ['w1', release]), await submit(a, 'flood.py', ['w2', release])];
  for (const [i, name] of waiting.entries()) {
    await until(async () => /FLOOD LAST LINE|reached its cap|budget/.test((await a('GET', `/api/apps/${name}/log`)).text), { timeoutMs: 120_000, what: `w${i + 1} wrote its log` });
  }
  withinBudget('with two drivers holding the budget');
  // Key B meanwhile: its record is written and its run recorded to the end, its log says why it is short.
  const other = await submit(b, 'ok.py');
  t.equal((await ended(b, other)).state, 'COMPLETED', 'key B\'s application ran to the end');
  t.match(await logOf(b, other), /OK RAN|driver logs' budget of 6 MiB \(--log-budget\) leaves this log/, 'B\'s log: its line, or why it has none');
  const free = statfsSync(fs);
  t.ok(free.bavail * free.bsize > 4 * MiB, `the records' filesystem keeps room (${free.bavail * free.bsize} bytes free)`);
  withinBudget('after B\'s run');

  writeFileSync(release, '');
  for (const [i, name] of waiting.entries()) t.equal((await ended(a, name)).state, 'COMPLETED', `w${i + 1} ended`);
  const first = await logOf(a, waiting[0]!);
  t.match(first, /FLOOD FIRST LINE w1[\s\S]*reached its cap of 3 MiB[\s\S]*FLOOD LAST LINE w1/, 'the newest runs\' logs read whole: head, cap note, tail');
  t.ok(statSync(join(dataDir, 'logs', `${waiting[0]}.log`)).size <= CAP + 1024, 'within its cap');
  t.match(await logOf(a, waiting[1]!), /FLOOD FIRST LINE w2/, 'the second one\'s head');
  // The oldest: not a silent 404 or an empty answer, but why.
  t.match(await logOf(a, done[0]!), /removed to keep the driver logs within their budget of 6 MiB/, 'the oldest log says it was removed for the budget');
  withinBudget('at the end');

  // And after: a record written, a run recorded, a record removed.
  const after = await submit(b, 'ok.py');
  t.equal((await ended(b, after)).state, 'COMPLETED', 'and after them');
  t.equal((await b('DELETE', `/api/apps/${after}`)).status < 300, true, 'a record removed');
});
