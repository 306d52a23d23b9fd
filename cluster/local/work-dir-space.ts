// Space for drivers' work dirs that the records do not share. A driver may write only in its work
// dir (sandbox.ts); on the data dir's disk, one that writes without end fills the disk for every
// record write (507) and every other driver. So, when the service can mount (it runs as root),
// each work dir is a tmpfs of its own with a size cap: the kernel answers the driver ENOSPC at
// the cap, and the space is given back when the service unmounts it, once the driver ended and
// its event log was moved out (driver-runs.ts). Memory-backed: docs/security.md weighs that.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, statfsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** `64MiB`, `1GiB`, `512KiB`, `1048576`; 0 or `off`: undefined (no cap). */
export function parseByteSize(text: string, flag: string): number | undefined {
  const match = /^(\d{1,12})\s*(|B|KiB|MiB|GiB|TiB)$/.exec(text.trim());
  if (text.trim() === 'off') return undefined;
  if (!match) throw new Error(`${flag} takes a size such as 64MiB or 2GiB (0 or off: no cap), not ${JSON.stringify(text)}`);
  const unit = { '': 1, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 }[match[2] as '' | 'B' | 'KiB' | 'MiB' | 'GiB' | 'TiB'];
  const bytes = Number(match[1]) * unit;
  return bytes === 0 ? undefined : bytes;
}

/** Whether `dir` is a mount point (another device than its parent). */
function isMountPoint(dir: string): boolean {
  try {
    return statSync(dir).dev !== statSync(dirname(dir)).dev;
  } catch {
    return false;
  }
}

/** Makes `workDir` a tmpfs of `bytes` (mode 0700, no devices, no setuid); throws when it cannot. */
export function mountWorkDir(workDir: string, bytes: number): void {
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  if (isMountPoint(workDir)) return; // a start tried again
  const run = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700,nosuid,nodev`, 'submission-work', workDir], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`could not mount the work dir's capped space: ${(run.stderr || run.error?.message || `exit ${run.status}`).trim()}`);
}

/** Whether the work dir's own space is used up (a driver that met its cap). */
export function workDirFull(workDir: string): boolean {
  if (!isMountPoint(workDir)) return false;
  try {
    const fs = statfsSync(workDir);
    return fs.bavail === 0;
  } catch {
    return false;
  }
}

/** Gives the work dir's space back: unmounted (lazily if still busy) and removed. */
export async function releaseWorkDir(workDir: string): Promise<void> {
  if (isMountPoint(workDir)) {
    const run = spawnSync('umount', [workDir], { encoding: 'utf8' });
    if (run.status !== 0) {
      const lazy = spawnSync('umount', ['-l', workDir], { encoding: 'utf8' });
      if (lazy.status !== 0) throw new Error(`could not unmount work dir ${workDir}: ${(lazy.stderr || run.stderr).trim()}`);
    }
  }
  await rm(workDir, { recursive: true, force: true });
}

/** Lazily unmounts every work dir below `workRoot` (a data dir's `work/`), for whoever removes a data dir whose drivers were killed. */
export function unmountWorkDirs(workRoot: string): void {
  for (const name of existsSync(workRoot) ? readdirSync(workRoot) : []) {
    const dir = join(workRoot, name);
    if (isMountPoint(dir)) spawnSync('umount', ['-l', dir]);
  }
}
