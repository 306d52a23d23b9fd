// The event-log index's loop (cluster/history/event-log-index.ts, driven by settleRun in
// cluster/history/settle.ts) on a fake clock over a real directory: a run that just ended is
// read again every `everyMs` until Spark has closed its log, and given up at the deadline; each
// refresh reads only what changed, and callers at once share one. No real waits.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { EventLogIndex } from '../../cluster/history/event-log-index.js';
import { settleRun, type SettleClock } from '../../cluster/history/settle.js';
import { logText, writeRollingLog } from '../helpers/event-logs.js';
import { tempDir } from '../helpers/temp.js';

/** Sleeping moves time on at once; `onSleep` runs at each sleep (the world changing meanwhile). */
function fakeClock(onSleep: (slept: number) => void = () => {}): SettleClock & { slept: number[] } {
  let now = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    async sleep(ms: number) {
      now += ms;
      slept.push(ms);
      onSleep(slept.length);
    },
  };
}

/** Closes a rolling log as Spark does when the application ends: its status file loses `.inprogress`. */
function closeLog(folder: string, sparkAppId: string): void {
  renameSync(join(folder, `appstatus_${sparkAppId}.inprogress`), join(folder, `appstatus_${sparkAppId}`));
}

t.test('settleRun reads again every everyMs until the run\'s log is closed, then answers at once', async (t) => {
  const dir = tempDir(t);
  const folder = writeRollingLog(dir, 'local-1', { sparkAppId: 'local-1', appName: 'pi-1' }, true);
  const index = new EventLogIndex(dir);
  const clock = fakeClock((sleeps) => { if (sleeps === 3) closeLog(folder, 'local-1'); });
  const run = await settleRun(index, 'pi-1', { withinMs: 10_000, everyMs: 500, clock });
  t.match(run, { sparkAppId: 'local-1', completed: true }, 'found complete');
  t.same(clock.slept, [500, 500, 500], 'three waits of everyMs: the log closed during the third');
});

t.test('settleRun gives up at its deadline with the run as last seen', async (t) => {
  const dir = tempDir(t);
  writeRollingLog(dir, 'local-2', { sparkAppId: 'local-2', appName: 'pi-2' }, true);
  const clock = fakeClock();
  const run = await settleRun(new EventLogIndex(dir), 'pi-2', { withinMs: 2_000, everyMs: 500, clock });
  t.match(run, { sparkAppId: 'local-2', completed: false }, 'still in progress');
  t.equal(clock.slept.length, 5, 'read at 0, 0.5, 1, 1.5, 2 and 2.5 s: past the 2 s deadline it stops');
  const none = await settleRun(new EventLogIndex(dir), 'nobody', { withinMs: 1_000, everyMs: 500, clock: fakeClock() });
  t.equal(none, undefined, 'a run never written: undefined at the deadline');
});

t.test('settleRun stops when its signal is aborted', async (t) => {
  const dir = tempDir(t);
  writeRollingLog(dir, 'local-3', { sparkAppId: 'local-3', appName: 'pi-3' }, true);
  const stop = new AbortController();
  const clock = fakeClock((sleeps) => { if (sleeps === 2) stop.abort(); });
  await settleRun(new EventLogIndex(dir), 'pi-3', { withinMs: 60_000, everyMs: 500, clock, signal: stop.signal });
  t.equal(clock.slept.length, 2, 'no read after the abort');
});

t.test('a log whose head is not written yet is read at the next refresh; a log gone is forgotten', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'local-4.inprogress');
  writeFileSync(file, ''); // the driver has opened its log and written nothing yet
  const index = new EventLogIndex(dir);
  await index.refresh();
  t.equal(index.lookup('pi-4'), undefined, 'nothing to place yet');
  writeFileSync(file, logText({ sparkAppId: 'local-4', appName: 'pi-4' }));
  await index.refresh();
  t.match(index.lookup('pi-4'), { sparkAppId: 'local-4', completed: false }, 'read again, and placed');
  renameSync(file, join(dir, 'local-4'));
  await index.refresh();
  t.match(index.lookup('pi-4'), { entry: 'local-4', completed: true }, 'the closed file is the same run, now complete');
  rmSync(join(dir, 'local-4'));
  await index.refresh();
  t.equal(index.lookup('pi-4'), undefined, 'removed from the directory: forgotten');
});

t.test('callers refreshing at once share one read of the directory', async (t) => {
  const dir = tempDir(t);
  writeRollingLog(dir, 'local-5', { sparkAppId: 'local-5', appName: 'pi-5' });
  const index = new EventLogIndex(dir);
  const first = index.refresh();
  t.equal(index.refresh(), first, 'the second caller gets the refresh under way');
  await first;
  const next = index.refresh();
  t.not(next, first, 'once it has ended, a new one starts');
  await next;
  t.match(index.lookup('pi-5'), { completed: true });
});
