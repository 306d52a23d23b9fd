// FakeKubelet's Secret volumes — TEST DOUBLE behaviour. A kubelet reads a pod's Secrets and
// mounts them into its containers; FakeKubelet runs drivers as processes of this machine, with
// no mount namespace of their own, so it writes each Secret volume's data into a per-pod
// directory (0700; files with the volume's defaultMode, 0644 if unset, as the kubelet does), makes
// that directory read-only (as a Secret mount is: the process cannot delete or change the files),
// and rewrites the container's env values that name a path under the volume's mountPath to the
// same path under that directory. What differs from a kubelet, on purpose and only here: a path
// the process builds itself (not from its env) under the mountPath is not found; files are owned
// by this user, not root with fsGroup; `items` and `optional` are honoured, projected volumes are not.
import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';

/** Reads a Secret of the pod's namespace; rejects with `code` 404 when it does not exist. */
export type ReadSecret = (name: string) => Promise<V1Secret>;

const notFound = (error: unknown) => (error as { code?: number }).code === 404;

export async function readWhenThere(read: ReadSecret, name: string, optional: boolean): Promise<V1Secret | undefined> {
  // A kubelet keeps the pod in ContainerCreating and tries again; a missing optional Secret is an empty volume.
  for (let attempt = 0; ; attempt++) {
    try {
      return await read(name);
    } catch (error) {
      if (!notFound(error)) throw error;
      if (optional) return undefined;
      if (attempt >= 60) throw new Error(`secret "${name}" not found (fake kubelet: gave up after 60 tries)`);
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

/** The pod with its Secret volumes written under `dir` and its env pointed there (see above). */
export async function materializeSecretVolumes(pod: V1Pod, dir: string, read: ReadSecret): Promise<V1Pod> {
  const volumes = (pod.spec?.volumes ?? []).filter((v) => v.secret?.secretName);
  if (volumes.length === 0) return pod;
  const where = new Map<string, string>(); // volume name -> its directory here
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const volume of volumes) {
    const source = volume.secret!;
    const secret = await readWhenThere(read, source.secretName!, source.optional === true);
    const target = join(dir, volume.name.replace(/[^a-z0-9-]/g, '-'));
    mkdirSync(target, { recursive: true, mode: 0o700 });
    const data = secret?.data ?? {};
    const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key, mode: undefined }));
    for (const item of items) {
      if (data[item.key] === undefined || item.path.split('/').some((part) => part === '..' || part === '')) continue;
      const file = join(target, item.path);
      mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
      writeFileSync(file, Buffer.from(data[item.key]!, 'base64'), { mode: item.mode ?? source.defaultMode ?? 0o644 });
    }
    chmodSync(target, 0o500); // read-only, as the mount is
    where.set(volume.name, target);
  }
  const containers = (pod.spec?.containers ?? []).map((container) => {
    const mounts = (container.volumeMounts ?? []).filter((m) => where.has(m.name))
      .sort((a, b) => b.mountPath.length - a.mountPath.length); // the deepest mount wins
    if (mounts.length === 0) return container;
    const mapped = (value: string | undefined) => {
      if (value === undefined) return value;
      const mount = mounts.find((m) => value === m.mountPath || value.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
      return mount ? where.get(mount.name)! + value.slice(mount.mountPath.replace(/\/$/, '').length) : value;
    };
    return { ...container, env: container.env?.map((e) => ({ ...e, value: mapped(e.value) })) };
  });
  return { ...pod, spec: { ...pod.spec!, containers } };
}

/** Removes what materializeSecretVolumes wrote for a pod (its directories are read-only). */
export function removeSecretVolumes(dir: string): void {
  let volumes: string[];
  try {
    volumes = readdirSync(dir);
  } catch {
    return; // nothing was written
  }
  for (const volume of volumes) chmodSync(join(dir, volume), 0o700);
  rmSync(dir, { recursive: true, force: true });
}
