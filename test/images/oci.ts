// Running an image from its OCI archive the way a node would, without a node: the archive's
// layers are applied in order (whiteouts included) onto a root filesystem, the image's config
// (entrypoint, user, environment, working directory) becomes a runc bundle, and Debian's runc
// runs it in its own PID, mount, UTS, IPC and network namespaces.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface Descriptor { mediaType: string; digest: string; annotations?: Record<string, string> }
export interface ImageConfig {
  User?: string; Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; WorkingDir?: string;
}
export interface Unpacked { rootfs: string; config: ImageConfig; name: string; layers: number }

const blob = (layout: string, digest: string) => join(layout, 'blobs', ...digest.split(':'));
const tar = (args: string[]) => execFileSync('tar', args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });

/** Unpacks ARCHIVE (a tar of an OCI layout holding one image) into DIR/rootfs. */
export function unpackImage(archive: string, dir: string): Unpacked {
  const layout = join(dir, 'layout');
  mkdirSync(layout, { recursive: true });
  tar(['-xf', archive, '-C', layout]);
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const [entry] = index.manifests;
  const manifest = JSON.parse(readFileSync(blob(layout, entry.digest), 'utf8')) as { config: Descriptor; layers: Descriptor[] };
  const config = (JSON.parse(readFileSync(blob(layout, manifest.config.digest), 'utf8')) as { config: ImageConfig }).config;
  const rootfs = join(dir, 'rootfs');
  mkdirSync(rootfs);
  for (const layer of manifest.layers) {
    const file = blob(layout, layer.digest);
    // A whiteout `.wh.NAME` deletes NAME of the layers below; `.wh..wh..opq` empties its directory.
    const whiteouts = tar(['-tf', file]).split('\n').filter((p) => /(^|\/)\.wh\./.test(p));
    for (const path of whiteouts) {
      const base = path.split('/').pop()!;
      const parent = join(rootfs, dirname(path));
      if (base === '.wh..wh..opq') rmSync(parent, { recursive: true, force: true });
      else rmSync(join(parent, base.slice('.wh.'.length)), { recursive: true, force: true });
    }
    tar(['-xf', file, '-C', rootfs, '--numeric-owner', '--same-permissions']);
    for (const path of whiteouts) rmSync(join(rootfs, path), { force: true });
  }
  rmSync(layout, { recursive: true, force: true });
  return { rootfs, config, name: entry.annotations?.['io.containerd.image.name'] ?? '', layers: manifest.layers.length };
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
