// Running an image from its OCI archive the way a node would, without a node: the archive's
// layers are applied in order (whiteouts included) onto a root filesystem, the image's config
// (entrypoint, user, environment, working directory) becomes a runc bundle, and Debian's runc
// runs it in its own PID, mount, UTS, IPC and network namespaces. The root filesystem is an
// overlay mount on the applied layers, as containerd's snapshotter gives a container: what a run
// writes goes to the overlay's upper directory, and the layers stay as the archive has them, so
// an image built on another (the kernel on the Spark runtime) is unpacked onto the other's layers.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface Descriptor { mediaType: string; digest: string; annotations?: Record<string, string> }
export interface ImageConfig {
  User?: string; Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; WorkingDir?: string;
}
export interface Unpacked {
  rootfs: string; config: ImageConfig; name: string; layers: number;
  /** The layers' digests, in order. */
  digests: string[];
  /** Where they lie, untouched by runs: what an image built on this one is unpacked onto. */
  lower?: string;
  /** This image's own folder: its layers (or those past its base's), the overlay's upper and work directories, rootfs. */
  dir: string;
}

const blob = (layout: string, digest: string) => join(layout, 'blobs', ...digest.split(':'));
const tar = (args: string[]) => execFileSync('tar', args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });

/** Applies a layer's tar onto `root`. */
function applyLayer(file: string, root: string): void {
  // A whiteout `.wh.NAME` deletes NAME of the layers below; `.wh..wh..opq` empties its directory.
  const whiteouts = tar(['-tf', file]).split('\n').filter((p) => /(^|\/)\.wh\./.test(p));
  for (const path of whiteouts) {
    const base = path.split('/').pop()!;
    const parent = join(root, dirname(path));
    if (base === '.wh..wh..opq') rmSync(parent, { recursive: true, force: true });
    else rmSync(join(parent, base.slice('.wh.'.length)), { recursive: true, force: true });
  }
  tar(['-xf', file, '-C', root, '--numeric-owner', '--same-permissions']);
  for (const path of whiteouts) rmSync(join(root, path), { force: true });
}

/** DIR/rootfs: an overlay of `lower`, written to DIR/upper. */
function mountOverlay(lower: string, dir: string): string {
  const [upper, work, rootfs] = ['upper', 'work', 'rootfs'].map((name) => join(dir, name));
  for (const path of [upper, work, rootfs]) mkdirSync(path);
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, rootfs]);
  return rootfs;
}

/**
 * Unpacks ARCHIVE (a tar of an OCI layout holding one image) under DIR; its root filesystem is
 * DIR/rootfs. With `base`, an image unpacked before whose layers are this one's first, only the
 * layers past those are unpacked, onto an overlay of the base's (whose own stay untouched).
 */
export function unpackImage(archive: string, dir: string, base?: Unpacked): Unpacked {
  if (base && !base.lower) throw new Error(`${base.name} was unpacked onto another image: it is no base`);
  const layout = join(dir, 'layout');
  mkdirSync(layout, { recursive: true });
  const shared = base?.digests ?? [];
  // The base's layer blobs are not needed again (GNU tar seeks past them in the archive).
  tar(['-xf', archive, '-C', layout, ...shared.map((digest) => `--exclude=${digest.split(':').join('/')}`)]);
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const [entry] = index.manifests;
  const manifest = JSON.parse(readFileSync(blob(layout, entry.digest), 'utf8')) as { config: Descriptor; layers: Descriptor[] };
  const config = (JSON.parse(readFileSync(blob(layout, manifest.config.digest), 'utf8')) as { config: ImageConfig }).config;
  const digests = manifest.layers.map((layer) => layer.digest);
  if (shared.some((digest, i) => digests[i] !== digest)) throw new Error(`${archive}: its layers do not start with ${base!.name}'s`);
  // Without a base, the layers go into a folder of their own, the overlay's lower; with one, onto
  // the overlay of the base's (a whiteout removing a base's file there is the overlay's own).
  const lower = base ? undefined : join(dir, 'layers');
  if (lower) mkdirSync(lower);
  const rootfs = base ? mountOverlay(base.lower!, dir) : undefined;
  for (const digest of digests.slice(shared.length)) applyLayer(blob(layout, digest), lower ?? rootfs!);
  rmSync(layout, { recursive: true, force: true });
  return { rootfs: rootfs ?? mountOverlay(lower!, dir), config, name: entry.annotations?.['io.containerd.image.name'] ?? '', layers: digests.length, digests, lower, dir };
}

/** Unmounts the image's overlay and removes its folder (a root filesystem is a gigabyte); no matter if already done. */
export function removeImage(image: Unpacked): void {
  if (spawnSync('mountpoint', ['-q', image.rootfs]).status === 0) execFileSync('umount', [image.rootfs]);
  rmSync(image.dir, { recursive: true, force: true });
}

export interface RunOptions {
  /** Replaces the image's CMD (the entrypoint stays, as in a pod's `args`). */
  args: string[];
  /** Replaces the image's entrypoint (a pod's `command`). */
  entrypoint?: string[];
  env?: Record<string, string>;
  timeoutMs?: number;
}
export interface RunResult { code: number; stdout: string; stderr: string }

let runs = 0;

/**
 * Runs the unpacked image once with runc and waits for it to end. The container gets a hosts
 * file naming its own hostname, as the kubelet writes one into every pod.
 */
export function runImage(image: Unpacked, work: string, options: RunOptions): Promise<RunResult> {
  const id = `subsvc-image-test-${process.pid}-${++runs}`;
  const bundle = join(work, id);
  mkdirSync(bundle, { recursive: true });
  execFileSync('runc', ['spec', '--bundle', bundle]);
  const spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as {
    process: { terminal: boolean; user: { uid: number; gid: number }; args: string[]; env: string[]; cwd: string };
    root: { path: string; readonly: boolean }; hostname: string;
    mounts: { destination: string; type: string; source: string; options: string[] }[];
  };
  const [uid, gid] = (image.config.User ?? '0').split(':');
  const hosts = join(bundle, 'hosts');
  writeFileSync(hosts, `127.0.0.1 localhost\n127.0.0.1 ${id}\n`);
  spec.hostname = id;
  spec.root = { path: image.rootfs, readonly: false };
  spec.mounts.push({ destination: '/etc/hosts', type: 'bind', source: hosts, options: ['rbind', 'ro'] });
  spec.process = {
    ...spec.process,
    terminal: false,
    user: { uid: Number(uid), gid: Number(gid ?? uid) },
    args: [...(options.entrypoint ?? image.config.Entrypoint ?? []), ...options.args],
    env: [...(image.config.Env ?? []), ...Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`)],
    cwd: image.config.WorkingDir || '/',
  };
  writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec));
  const state = join(work, 'runc-state');
  return new Promise((resolve, reject) => {
    execFile('runc', ['--root', state, 'run', '--bundle', bundle, id],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 300_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        // A run cut short by the timeout leaves its container behind: remove it by its id.
        try { execFileSync('runc', ['--root', state, 'delete', '--force', id], { stdio: 'ignore' }); } catch { /* already gone */ }
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (error && error.killed) reject(new Error(`${id} did not end in time:\n${stdout}\n${stderr}`));
        else resolve({ code, stdout, stderr });
      });
  });
}
