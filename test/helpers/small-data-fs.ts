// A local service's data dir on a small tmpfs of its own (root only: it mounts one), and a
// stand-in Spark virtualenv whose spark-submit runs the application's .py file with the machine's
// Python: for the tests that fill a filesystem under a running service (work-dir caps, full disk).
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { unmountWorkDirs } from '../../cluster/local/work-dir-space.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { http, startService } from './service.js';

const STAND_IN_SPARK_SUBMIT = `#!/bin/sh
# Stand-in for spark-submit: runs the .py main file with its arguments.
while [ $# -gt 0 ]; do
  case "$1" in *.py) f=$1; shift; exec /usr/bin/python3 "$f" "$@" ;; esac
  shift
done
exit 2
`;

export interface SmallDataFs {
  /** The tmpfs's mount point; the data dir is `data` below it. */
  fs: string;
  dataDir: string;
  /** The stand-in virtualenv (SUBMISSION_SERVICE_PYTHON_ENV), off the small filesystem, with `programs` in it. */
  venv: string;
  /** A file in the venv that the programs may wait for (written by the test, even while the tmpfs is full). */
  release: string;
}

/**
 * Mounts a tmpfs of `sizeMiB` for the data dir, under /var/tmp (drivers get a /tmp of their own)
 * and open to the driver user down to the venv, and writes `programs` (name → Python source) into
 * the stand-in venv. Unmounted and removed at teardown.
 */
export function smallDataFs(t: { teardown(fn: () => unknown): void }, sizeMiB: number, programs: Record<string, string>): SmallDataFs {
  const root = mkdtempSync('/var/tmp/subsvc-disk-');
  chmodSync(root, 0o755);
  const fs = join(root, 'data-fs');
  mkdirSync(fs);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'subsvc-test-data', fs]);
  if (mounted.status !== 0) throw new Error(`mount: ${mounted.stderr}`);
  t.teardown(() => {
    unmountWorkDirs(join(fs, 'data', 'work'));
    spawnSync('umount', ['-l', fs]);
    rmSync(root, { recursive: true, force: true });
  });
  const venv = join(root, 'venv');
  mkdirSync(join(venv, 'bin'), { recursive: true, mode: 0o755 });
  writeFileSync(join(venv, 'bin', 'spark-submit'), STAND_IN_SPARK_SUBMIT, { mode: 0o755 });
  symlinkSync('/usr/bin/python3', join(venv, 'bin', 'python'));
  for (const [name, source] of Object.entries(programs)) writeFileSync(join(venv, name), source, { mode: 0o644 });
  return { fs, dataDir: join(fs, 'data'), venv, release: join(venv, 'release') };
}

/**
 * The service on `disk` with auth on and two user keys (alice's `a`, bob's `b`), `args` added to
 * its command line, and `submit`: one of the venv's programs as a 1-core Python application.
 */
export async function twoUsersOnSmallFs(t: Test, disk: SmallDataFs, args: string[], jobName: string) {
  const store = new FileKeyStore(disk.dataDir);
  const [alice, bob] = [store.create('user', 'alice').key, store.create('user', 'bob').key];
  const api = await startService(t, { dataDir: disk.dataDir, env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: disk.venv }, args: ['--auth', 'on', ...args] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  const [a, b] = [as(alice), as(bob)];
  const submit = async (call: typeof a, file: string, programArgs: string[] = []) => {
    const res = await call('POST', '/api/apps/', { jobName, configOverrides: { type: 'Python', mainApplicationFile: `local://${join(disk.venv, file)}`, arguments: programArgs, executor: { cores: 1, instances: 1 } } });
    t.equal(res.status, 201, `submitted ${file} ${programArgs[0] ?? ''}: ${res.text.slice(0, 300)}`);
    return res.json.appName as string;
  };
  return { api, a, b, submit };
}
