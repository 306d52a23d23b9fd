// A driver that fills its work dir and floods its output must not fill the data dir's disk
// (issue 25: everyone got 507, even after it ended). The real `submission-service local` as root
// with the sandbox, its data dir on a small filesystem of its own (a 48 MiB tmpfs, so no real disk
// fills), a 16 MiB work-dir cap and a 1 MiB log cap. The driver is a plain Python main file, run by
// a stand-in spark-submit (no JVM): it writes 256 MiB into its work dir, then 4 MiB to stdout, then
// waits until the test lets it end. Before the fix its work dir lay on the data dir's filesystem:
// the writes filled it, and the other key's submission was answered 507.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { until, waitForState } from '../helpers/poll.js';
import { smallDataFs, twoUsersOnSmallFs } from '../helpers/small-data-fs.js';

const canMount = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0;
const skip = canMount ? false : 'needs root (mount) and bubblewrap';

const WRITER = `import os, sys, time
try:
    with open('big', 'wb') as f:
        for i in range(256):
            f.write(b'\\0' * (1 << 20))
            f.flush()
    print('WORK DIR NOT FULL', flush=True)
except OSError as e:
    print('WORK DIR FULL', e.errno, flush=True)
line = 'x' * 1023 + '\\n'
for i in range(4096):
    sys.stdout.write(line)
sys.stdout.write('WRITER LAST LINE\\n')
sys.stdout.flush()
release = sys.argv[1]
while not os.path.exists(release):
    time.sleep(0.2)
sys.exit(1)
`;

t.test('a driver over its work-dir and log caps: others still submit, it fails clearly, its work dir goes', { skip, timeout: 240_000 }, async (t) => {
  const disk = smallDataFs(t, 48, { 'writer.py': WRITER, 'ok.py': "print('OK RAN', flush=True)\n" });
  const { dataDir, release } = disk;
  const { a, b, submit } = await twoUsersOnSmallFs(t, disk, ['--cores', '2', '--key-core-share', '0', '--work-dir-cap', '16MiB', '--log-cap', '1MiB'], 'disk');
  const stateOf = (call: typeof a, name: string) => async () => (await call('GET', `/api/apps/${name}`)).json as { state: string; stateDetail?: string };

  const writer = await submit(a, 'writer.py', [release]);
  await until(async () => /WORK DIR (NOT )?FULL/.test((await a('GET', `/api/apps/${writer}/log`)).text), { timeoutMs: 120_000, what: 'the writer filled its work dir' });
  t.match((await a('GET', `/api/apps/${writer}/log`)).text, /WORK DIR FULL 28/, 'the driver met ENOSPC in its work dir');

  // Meanwhile: the other key submits, and its run is recorded to the end.
  const other = await submit(b, 'ok.py');
  const done = await waitForState(stateOf(b, other), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 });
  t.equal(done.state, 'COMPLETED', `the other key's application ran to the end (${done.stateDetail})`);

  writeFileSync(release, '');
  const ended = await waitForState(stateOf(a, writer), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 });
  t.equal(ended.state, 'FAILED');
  t.match(ended.stateDetail, /exit code 1; its work dir was full \(its cap: 16 MiB\)/, 'the state says why');
  const workDir = join(dataDir, 'work', writer);
  await until(() => !existsSync(workDir), { timeoutMs: 60_000, what: 'the work dir removed' });
  t.notOk(existsSync(workDir), 'its work dir is gone once it ended');

  const log = join(dataDir, 'logs', `${writer}.log`);
  t.ok(statSync(log).size <= 1024 * 1024 + 1024, `its log kept within the cap (${statSync(log).size} bytes)`);
  const text = (await a('GET', `/api/apps/${writer}/log`)).text;
  t.match(text, /WORK DIR FULL/, 'the head is kept');
  t.match(text, /reached its cap of 1 MiB/, 'the log says it was cut');
  t.match(text, /bytes of this log were dropped; its last \d+ bytes follow/);
  t.match(text, /WRITER LAST LINE/, 'the tail is kept');

  // After: records are written, new applications start.
  const after = await submit(b, 'ok.py');
  t.equal((await waitForState(stateOf(b, after), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 120_000 })).state, 'COMPLETED', 'and after it');
  t.equal((await b('DELETE', `/api/apps/${after}`)).status < 300, true, 'a record removed');
});
