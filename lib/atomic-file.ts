// Files that are either wholly old or wholly new: write a temp file, fsync, rename. The one
// implementation for the whole tree (records, templates, keys, certificates). A failed write
// removes its temp file; a crash mid-write leaves a `.tmp-*` file that readers skip and
// `removeTempFiles` clears at the next start.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

const tempName = (path: string) => `${path}.tmp-${randomBytes(4).toString('hex')}`;
export const isTempFile = (name: string) => /\.tmp-[0-9a-f]{8}$/.test(name);

/** Files default to 0600 and their directory to 0700: records and keys may hold secrets. */
export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

export type WriteFileAtomic = (path: string, data: string, mode?: number) => Promise<void>;

export async function writeFileAtomic(path: string, data: string, mode = PRIVATE_FILE): Promise<void> {
  const temp = tempName(path);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    // Best effort: the write's own error is the one worth reporting.
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

export function writeFileAtomicSync(path: string, data: string, mode = PRIVATE_FILE): void {
  const temp = tempName(path);
  try {
    const fd = openSync(temp, 'wx', mode);
    try {
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    try { unlinkSync(temp); } catch { /* never created, or already renamed */ }
    throw error;
  }
}

/** mkdir -p with owner-only access for what it creates. */
export const makePrivateDir = (dir: string) => mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
export const makePrivateDirAsync = async (dir: string) => { await mkdir(dir, { recursive: true, mode: PRIVATE_DIR }); };

/** Deletes the temp files a crash left in dir (ours, or those `isTemp` names); returns their names (for the log). */
export function removeTempFiles(dir: string, isTemp: (name: string) => boolean = isTempFile): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!isTemp(name)) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return removed;
}

/** Moves a file that cannot be read aside (`NAME.corrupt`), so that starting is not blocked by it. */
export function setAside(path: string): string {
  const target = `${path}.corrupt`;
  renameSync(path, target);
  return target;
}
