// Files that are either wholly old or wholly new: write a temp file, fsync, rename.
// A crash mid-write leaves a stray `.tmp-*` file that readers skip, never a half record.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';

const tempName = (path: string) => `${path}.tmp-${randomBytes(4).toString('hex')}`;
export const isTempFile = (name: string) => /\.tmp-[0-9a-f]{8}$/.test(name);

export async function writeFileAtomic(path: string, data: string, mode = 0o644): Promise<void> {
  const temp = tempName(path);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

export function writeFileAtomicSync(path: string, data: string, mode = 0o644): void {
  const temp = tempName(path);
  const fd = openSync(temp, 'w', mode);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}
