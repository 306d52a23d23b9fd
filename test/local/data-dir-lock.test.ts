// One local-mode service per data dir: a second `submission-service local` on the same
// --data-dir refuses to start and names the process that holds it; the lock of a process that
// is gone (SIGKILL) is taken over, and a clean stop removes it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { LOCK_FILE } from '../../lib/data-dir-lock.js';
import { exampleClusterFile } from '../helpers/api.js';
import { runCli, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const localArgs = (dataDir: string) => ['local', '--port', '0', '--data-dir', dataDir, '--node-pools', exampleClusterFile];

t.test('a second process on a held data dir refuses to start, naming the holder; a killed holder\'s lock is taken over', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const first = await startService(t, { dataDir });
  const holder = first.child.pid!;
  t.equal(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid, holder, 'the lock file names the running service');

  const second = await runCli(localArgs(dataDir), { LOG_LEVEL: 'warn', ...sparkEnv() });
  t.equal(second.code, 1, 'the second process exits with 1');
  t.match(second.stderr, new RegExp(`data dir .* is in use by process ${holder}\\b`), 'its message names the pid holding the dir');
  t.notMatch(second.stdout, /Submission Service \(local mode\) at/, 'it never listened');
  t.equal((await fetch(`${first.url}/api/apps/`)).status, 200, 'the first service still answers');

  t.equal(await first.stop('SIGKILL'), 'SIGKILL', 'the holder dies without cleaning up');
  t.ok(existsSync(join(dataDir, LOCK_FILE)), 'its lock file is left behind');
  const third = await startService(t, { dataDir });
  t.equal(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid, third.child.pid, 'the stale lock is taken over');
  t.equal(await third.stop('SIGTERM'), 0, 'a clean stop');
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'a clean stop removes the lock');
});

t.test('a lock naming a live pid with another start time (a reused pid) is stale', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  mkdirSync(dataDir, { recursive: true });
  // pid 1 runs, but its start time is not -1: the pid was reused, its holder is gone.
  writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify({ pid: 1, startTicks: -1 }));
  const service = await startService(t, { dataDir });
  t.equal(JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')).pid, service.child.pid, 'the service took the lock');
  t.equal(await service.stop('SIGTERM'), 0, 'and stops cleanly');
});
