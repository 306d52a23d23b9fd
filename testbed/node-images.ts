// The images a real node has from its start. Importing an image unpacks every layer (gunzip, a
// digest of each, every file written): one Spark runtime image took containerd 13-16 s of CPU
// and 28-49 s on a loaded machine, and a chart test imports five (4.6 GB), so every real-node
// test paid a few minutes for the same bytes. Instead the images are imported once into a store
// (cached by the archives it holds, which are themselves cached by their inputs) and each node's
// containerd root starts as hard links to it. A node never changes the store through them: the
// layers are only read (overlayfs' lower directories; a container's writes go to its own
// snapshot) and removing an image unlinks its files; the few files containerd writes in place
// (its bolt databases) are copied instead of linked.
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { cacheDir } from '../lib/cache-dir.js';
import { containerdConfig, nodePaths } from './node-config.js';
import { containerdAnswers, spawnDaemon, terminate } from './node-daemons.js';

const run = promisify(execFile);

/** Unpacked images in a containerd root (`root`), with the archives they were imported from. */
export interface ImageStore { dir: string; root: string; archives: string[] }

/** Where the stores live: beside the other caches (SUBMISSION_SERVICE_CACHE, as the build scripts). */
const storesDir = () => join(cacheDir(), 'node-images');
/** A store nobody has started a node from for this long is removed when another is made. */
const UNUSED_MS = 12 * 3600_000;
/** Under a root, the trees that are only ever read or removed whole: linked; every other file is copied. */
const LINKED = new Set(['io.containerd.content.v1.content/blobs', 'io.containerd.snapshotter.v1.overlayfs/snapshots']);

/** Imports an OCI archive into the containerd at `socket` (the k8s.io namespace pods use). */
export async function importImage(binDir: string, socket: string, file: string): Promise<void> {
  await run(join(binDir, 'ctr'), ['--address', socket, '-n', 'k8s.io', 'images', 'import', '--local', file], { maxBuffer: 1 << 20 });
}

/** A store that holds every archive of `archives` (one that holds more will do), made when none does. */
export async function imageStore(binDir: string, runc: string, archives: string[]): Promise<ImageStore> {
  const wanted = [...new Set(archives)].sort();
  return findStore(wanted) ?? await makeStore(binDir, runc, wanted);
}

function findStore(wanted: string[]): ImageStore | undefined {
  const holding = readStores().filter((store) => wanted.every((archive) => store.archives.includes(archive)));
  return holding.sort((a, b) => a.archives.length - b.archives.length)[0];
}

function readStores(): ImageStore[] {
  if (!existsSync(storesDir())) return [];
  return readdirSync(storesDir()).flatMap((name) => {
    const dir = join(storesDir(), name);
    try {
      return [{ dir, root: join(dir, 'root'), archives: JSON.parse(readFileSync(join(dir, 'archives.json'), 'utf8')) as string[] }];
    } catch { return []; } // being made, or left half made by a crash
  });
}

async function makeStore(binDir: string, runc: string, archives: string[]): Promise<ImageStore> {
  const key = createHash('sha256').update([binDir, ...archives].join('\n')).digest('hex').slice(0, 16);
  const dir = join(storesDir(), key);
  const making = `${dir}.making-${process.pid}`;
  // A unix socket's path is short (108 bytes), a cache's path need not be.
  const socketDir = mkdtempSync(join(tmpdir(), 'subsvc-images-'));
  const p = { ...nodePaths(making), socket: join(socketDir, 'containerd.sock') };
  rmSync(making, { recursive: true, force: true });
  mkdirSync(p.containerdRoot, { recursive: true });
  writeFileSync(p.containerdConfig, containerdConfig(p, binDir, runc));
  const containerd = spawnDaemon(binDir, p.containerdLog, ['run', join(binDir, 'containerd'), '--config', p.containerdConfig]);
  try {
    await containerdAnswers(binDir, p.socket, containerd, p.containerdLog);
    for (const archive of archives) await importImage(binDir, p.socket, archive);
  } finally {
    await terminate(containerd, 10_000);
    rmSync(socketDir, { recursive: true, force: true });
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  renameSync(p.containerdRoot, join(dir, 'root'));
  writeFileSync(join(dir, 'archives.json'), JSON.stringify(archives));
  rmSync(making, { recursive: true, force: true });
  pruneStores(dir);
  return { dir, root: join(dir, 'root'), archives };
}

/** Stores not used for UNUSED_MS, and what crashed makers left. Nodes started from them keep their links. */
function pruneStores(keep: string): void {
  for (const name of readdirSync(storesDir())) {
    const dir = join(storesDir(), name);
    const maker = /\.making-(\d+)$/.exec(name);
    const stale = maker ? !alive(Number(maker[1])) : dir !== keep && lastUse(dir) < Date.now() - UNUSED_MS;
    if (stale) { try { rmSync(dir, { recursive: true, force: true }); } catch (error) { process.stderr.write(`testbed: ${dir}: ${(error as Error).message}\n`); } }
  }
}

const lastUse = (dir: string) => { try { return statSync(join(dir, 'archives.json')).mtimeMs; } catch { return 0; } };
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

/** `root` (absent or empty) becomes a containerd root holding the store's images. */
export function seedRoot(store: ImageStore, root: string): void {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(dirname(root), { recursive: true });
  execFileSync('cp', ['-a', '--link', store.root, root]);
  for (const file of writtenInPlace(root, root)) {
    copyFileSync(file, `${file}.copy`);
    renameSync(`${file}.copy`, file); // a file of its own, no longer the store's
  }
  const now = new Date();
  utimesSync(join(store.dir, 'archives.json'), now, now);
}

function writtenInPlace(root: string, dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return LINKED.has(relative(root, path)) ? [] : writtenInPlace(root, path);
    return entry.isFile() ? [path] : [];
  });
}
