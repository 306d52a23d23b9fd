// A finished driver's exit code is recorded even when the records' filesystem is full (issue 25:
// exit files where drivers cannot crowd them out). The service writes each driver's exit file
// before it starts it, 8 spaces (cluster/local/driver-runs.ts), and the wrapper writes the code
// over them in place (process-runner.ts, `1<>`): the space is the file's already. The real
// `submission-service local`, its data dir on a small filesystem of its own (a 16 MiB tmpfs, so
// no real disk fills: it needs root to mount), a plain Python main file run by a stand-in
// spark-submit (no JVM) that waits until the test lets it end with code 3. The test fills the
// filesystem while the driver waits, and lets it end: without the space taken before, the wrapper
// could not write the code (ENOSPC) and the run would end UNKNOWN. Its record cannot be written
// then either: after the space comes back, a restarted service settles it from the exit file.
import { closeSync, openSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readExitCode } from '../../cluster/local/process-runner.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, startService } from '../helpers/service.js';
import { smallDataFs } from '../helpers/small-data-fs.js';

const skip = process.getuid?.() === 0 ? false : 'needs root (mounts a tmpfs for the data dir)';

const WAITER = `import os, sys, time
release = sys.argv[1]
while not os.path.exists(release):
    time.sleep(0.2)
sys.exit(3)
`;

/** Fills the filesystem at `file` to its last page (big writes, then page-sized ones); true when a further byte is refused. */
function fill(file: string): boolean {
  const fd = openSync(file, 'w');
  try {
    for (const size of [1 << 20, 4096, 1]) {
      const chunk = Buffer.alloc(size, 1);
      for (;;) {
        try {
          if (writeSync(fd, chunk) < size) break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  try {
    writeFileSync(`${file}.more`, 'x');
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOSPC';
  }
}

t.test('a driver that ends while the records\' disk is full still has its exit code recorded', { skip, timeout: 300_000 }, async (t) => {
  const { fs, dataDir, venv, release } = smallDataFs(t, 16, { 'waiter.py': WAITER });
  const options = { dataDir, env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: venv }, args: ['--sandbox', 'off', '--cores', '2'] };
  const api = await startService(t, options);
  const call = (base: string) => (method: string, path: string, body?: unknown) => http(base, method, path, body);
  const first = call(api.url);
  const created = await first('POST', '/api/apps/', { jobName: 'waits', configOverrides: { type: 'Python', mainApplicationFile: `local://${join(venv, 'waiter.py')}`, arguments: [release] } });
  t.equal(created.status, 201, created.text.slice(0, 300));
  const appName = created.json.appName as string;
  const stateOf = (ask: typeof first) => async () => (await ask('GET', `/api/apps/${appName}`)).json as { state: string; stateDetail?: string };
  await waitForState(stateOf(first), 'RUNNING', { timeoutMs: 120_000 });

  const filler = join(fs, 'filler');
  t.ok(fill(filler), 'the data dir\'s filesystem is full: not one more byte');
  const refused = await first('POST', '/api/apps/', { jobName: 'more', configOverrides: { type: 'Python', mainApplicationFile: `local://${join(venv, 'waiter.py')}` } });
  t.equal(refused.status, 507, `the service cannot write a record either (${refused.text.slice(0, 200)})`);

  writeFileSync(release, '');
  const ended = await waitForState(stateOf(first), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 });
  t.equal(ended.state, 'FAILED', `ended with its own code, not UNKNOWN (${ended.stateDetail})`);
  t.match(ended.stateDetail, /^exit code 3/, 'the code the driver ended with');
  t.equal(readExitCode(join(dataDir, 'run', `${appName}.exit`)), 3, 'the exit file holds it, written on the full disk');

  // The record on disk may still say RUNNING (its write failed): with room again, a new service
  // settles it from the exit file, with the same code.
  unlinkSync(filler);
  rmSync(`${filler}.more`, { force: true });
  api.child.kill('SIGKILL');
  await until(() => api.child.exitCode !== null || api.child.signalCode !== null, { timeoutMs: 30_000, what: 'the first service gone' });
  const again = await startService(t, options);
  const settled = await waitForState(stateOf(call(again.url)), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 });
  t.equal(settled.state, 'FAILED', `after a restart too (${settled.stateDetail})`);
  t.match(settled.stateDetail, /^exit code 3/);
});
