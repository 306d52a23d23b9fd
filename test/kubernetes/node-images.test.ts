// The real node's image store (testbed/node-images.ts): images unpacked once, each node's
// containerd root made of hard links to them. What a node does to its images (here: removes
// one, and writes its databases) must leave the store as it was for the next node. A containerd
// of its own, no kubelet: it runs beside a real node (its own root, state and socket).
import t from 'tap';
import { type ChildProcess, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { realNodeUnavailable } from '../helpers/real-node.js';
import { tempDir } from '../helpers/temp.js';
import { containerdConfig, nodePaths, SANDBOX_IMAGE, TEST_IMAGE } from '../../testbed/node-config.js';
import { containerdAnswers, spawnDaemon, terminate } from '../../testbed/node-daemons.js';
import { imageStore, seedRoot } from '../../testbed/node-images.js';
import { nodeBinDir } from '../../testbed/real-node.js';

const run = promisify(execFile);
const unavailable = realNodeUnavailable();
const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

t.test('a node seeded from the store has its images, and what it does to them leaves the store as it was', { skip: unavailable }, async (t) => {
  const dir = tempDir(t, 'subsvc-node-images-');
  const before = process.env.SUBMISSION_SERVICE_CACHE;
  process.env.SUBMISSION_SERVICE_CACHE = join(dir, 'cache');
  t.teardown(() => { if (before === undefined) delete process.env.SUBMISSION_SERVICE_CACHE; else process.env.SUBMISSION_SERVICE_CACHE = before; });
  const binDir = nodeBinDir();
  const runc = (await run('sh', ['-c', 'command -v runc'])).stdout.trim();
  const archives = [join(binDir, 'pause.tar'), join(binDir, 'testbox.tar')];

  const store = await imageStore(binDir, runc, archives);
  const made = statSync(store.root).ctimeMs;
  t.same((await imageStore(binDir, runc, [...archives].reverse())).dir, store.dir, 'the same archives: the same store, found');
  t.same((await imageStore(binDir, runc, [archives[0]!])).dir, store.dir, 'fewer archives: a store that holds more will do');
  t.equal(statSync(store.root).ctimeMs, made, 'not made again');
  const databases = ['io.containerd.metadata.v1.bolt/meta.db', 'io.containerd.snapshotter.v1.overlayfs/metadata.db'];
  const storeDigests = databases.map((db) => digest(join(store.root, db)));

  const first = await containerdOn(t, join(dir, 'a'), binDir, runc, store);
  t.same(await images(first), [SANDBOX_IMAGE, TEST_IMAGE].sort(), 'a seeded node has the images without an import');
  // Every name of it (the CRI plugin adds its id as one), then its content and layers collected.
  await ctr(first, ['images', 'rm', '--sync', ...await refsOf(first, TEST_IMAGE)]);
  t.same(await images(first), [SANDBOX_IMAGE], 'the node removed one, its layers with it');
  await first.stop();

  t.same(databases.map((db) => digest(join(store.root, db))), storeDigests, 'the store\'s databases are as they were');
  const second = await containerdOn(t, join(dir, 'b'), binDir, runc, store);
  t.same(await images(second), [SANDBOX_IMAGE, TEST_IMAGE].sort(), 'the next node has both');
  const layers = join(nodePaths(join(dir, 'b')).containerdRoot, 'io.containerd.snapshotter.v1.overlayfs', 'snapshots');
  const unpacked = readdirSync(layers).map((id) => join(layers, id, 'fs', 'testbox')).filter((file) => existsSync(file));
  t.same(unpacked.map(digest), [digest(join(binDir, 'testbox'))], 'its layer is whole: the image\'s one file, byte for byte');
  await second.stop();
});

interface Containerd { binDir: string; socket: string; stop(): Promise<void> }

async function containerdOn(t: { teardown(fn: () => unknown): void }, dir: string, binDir: string, runc: string, store: Awaited<ReturnType<typeof imageStore>>): Promise<Containerd> {
  const p = nodePaths(dir);
  mkdirSync(dir, { recursive: true });
  seedRoot(store, p.containerdRoot);
  mkdirSync(p.containerdState, { recursive: true });
  writeFileSync(p.containerdConfig, containerdConfig(p, binDir, runc));
  const child: ChildProcess = spawnDaemon(binDir, p.containerdLog, ['run', join(binDir, 'containerd'), '--config', p.containerdConfig]);
  const stop = () => terminate(child, 10_000);
  t.teardown(stop);
  await containerdAnswers(binDir, p.socket, child, p.containerdLog);
  return { binDir, socket: p.socket, stop };
}

const ctr = async (c: Containerd, args: string[]) => (await run(join(c.binDir, 'ctr'), ['--address', c.socket, '-n', 'k8s.io', ...args])).stdout;
/** The images by name (the CRI plugin's `sha256:` names of the same images left out). */
const images = async (c: Containerd) => (await ctr(c, ['images', 'ls', '-q'])).split('\n').filter((ref) => ref && !ref.startsWith('sha256:')).sort();

/** Every name that points where `name` does. */
async function refsOf(c: Containerd, name: string): Promise<string[]> {
  const rows = (await ctr(c, ['images', 'ls'])).split('\n').slice(1).map((line) => line.split(/\s+/)).filter((cols) => cols.length > 2);
  const target = rows.find(([ref]) => ref === name)?.[2];
  return rows.filter(([, , digest]) => digest === target).map(([ref]) => ref!);
}
