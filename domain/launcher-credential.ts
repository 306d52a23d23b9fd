// A notebook kernel's launcher credential (its one-time token), delivered beside the
// application's config, never inside it: whatever is in `config` is shown by the API and
// copied onto the Application, and on Kubernetes a pod's env is readable by anyone who may
// `get pods` in the namespace (every driver's service account may). So the token travels in a
// header from the gateway to the API (lib/gateway-proof.ts), the cluster keeps it where only
// the kernel's driver reads it, and the driver's env names only the file.
//
// Kubernetes: a Secret `<app>-launcher`, owned by the Application (it goes with it), mounted
// read-only into the driver container, mode 0440 with the pod's fsGroup, so that the image's
// user (Spark's is 185) reads it through its group whatever its uid; no other pod mounts it,
// and drivers' service accounts cannot read Secrets.
import type { V1Pod } from '@kubernetes/client-node';
import { DRIVER_CONTAINER } from './labels.js';

/** The env variable that tells the launcher where its token is (launcher.py reads it). */
export const LAUNCHER_TOKEN_FILE_ENV = 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE';
/** Where the driver container sees the Secret, and the token in it. */
export const LAUNCHER_SECRET_MOUNT = '/var/run/submission-service/launcher';
export const LAUNCHER_SECRET_KEY = 'token';
export const LAUNCHER_SECRET_VOLUME = 'kernel-launcher';
/** Group of the Spark images' user (185); the Secret's files are 0440 and owned by it. */
export const LAUNCHER_FS_GROUP = 185;

/** What a token must look like (the gateway's are 32 base64url characters). */
export const isLauncherToken = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z0-9_-]{16,256}$/.test(value);

export const launcherSecretName = (appName: string) => `${appName}-launcher`;

/** The bare pod with an env entry: the launcher finds its token at `file`. */
export function withLauncherTokenFile(pod: V1Pod, file: string): V1Pod {
  const spec = pod.spec ?? { containers: [] };
  const containers = spec.containers.map((c) => (c.name === DRIVER_CONTAINER
    ? { ...c, env: [...(c.env ?? []), { name: LAUNCHER_TOKEN_FILE_ENV, value: file }] }
    : c));
  return { ...pod, spec: { ...spec, containers } };
}

/** The bare pod with the launcher's Secret mounted into the driver container (and the env naming the file). */
export function withLauncherSecret(pod: V1Pod, secretName: string): V1Pod {
  const named = withLauncherTokenFile(pod, `${LAUNCHER_SECRET_MOUNT}/${LAUNCHER_SECRET_KEY}`);
  const spec = named.spec!;
  const containers = spec.containers.map((c) => (c.name === DRIVER_CONTAINER
    ? { ...c, volumeMounts: [...(c.volumeMounts ?? []), { name: LAUNCHER_SECRET_VOLUME, mountPath: LAUNCHER_SECRET_MOUNT, readOnly: true }] }
    : c));
  return {
    ...named,
    spec: {
      ...spec,
      containers,
      volumes: [...(spec.volumes ?? []), { name: LAUNCHER_SECRET_VOLUME, secret: { secretName, defaultMode: 0o440 } }],
      securityContext: { fsGroup: LAUNCHER_FS_GROUP, ...spec.securityContext },
    },
  };
}
