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
//
// A retried kernel (restartPolicy, domain/attempts.ts) runs a new driver and a new launcher,
// and the first token is spent: each later attempt gets a token of its own, in a Secret of its
// own named after its driver pod. The API's controller makes it without asking the gateway (the
// gateway may be restarting, and the attempt's pod must not wait on it): an HMAC of the kernel
// id and the attempt's number under the secret the API and the standalone gateway share, which
// the gateway checks and takes once, for a later attempt than any it took before (launcher-auth.ts).
import { createHmac } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { DRIVER_CONTAINER, KERNEL_ID_LABEL_KEY, LABEL_ATTEMPT } from './labels.js';

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

/** The Secret of a driver pod's launcher token: the first attempt's pod is named as its application, a later one's after its attempt. */
export const launcherSecretName = (driverPodName: string) => `${driverPodName}-launcher`;

/** A later attempt's token: `attempt-<n>-<HMAC>`, n from 2 (the first token is the gateway's own, random). */
const ATTEMPT_TOKEN = /^attempt-([1-9][0-9]{0,3})-[A-Za-z0-9_-]{43}$/;

/** The launcher token of attempt `attempt` (2 or more) of kernel `kernelId`, under the secret the API and the gateway share. */
export function attemptLauncherToken(gatewaySecret: string, kernelId: string, attempt: number): string {
  const mac = createHmac('sha256', gatewaySecret).update(`submission-service: launcher of kernel ${kernelId}, attempt ${attempt}`).digest('base64url');
  return `attempt-${attempt}-${mac}`;
}

/** The attempt a token claims to be for (2 or more), or undefined when it is not an attempt's token. */
export function launcherTokenAttempt(credential: string): number | undefined {
  const match = ATTEMPT_TOKEN.exec(credential);
  const attempt = match ? Number(match[1]) : undefined;
  return attempt !== undefined && attempt >= 2 ? attempt : undefined;
}

export interface LauncherCredential {
  /** The driver pod with its Secret mounted. */
  pod: V1Pod;
  secretName: string;
  token: string;
}

/**
 * Local mode: where a retried kernel's launcher reads its token (the file its driver's env
 * names, which the last attempt's launcher deleted), and which kernel it is. Undefined for a
 * first attempt or a driver that is not a kernel's with a token file.
 */
export function retriedKernelTokenFile(pod: V1Pod, attempt: number): { kernelId: string; file: string } | undefined {
  const kernelId = pod.metadata?.labels?.[KERNEL_ID_LABEL_KEY];
  const driver = pod.spec?.containers.find((c) => c.name === DRIVER_CONTAINER);
  const file = driver?.env?.find((e) => e.name === LAUNCHER_TOKEN_FILE_ENV)?.value;
  return attempt >= 2 && kernelId && file ? { kernelId, file } : undefined;
}

/**
 * A retried kernel's launcher credential: for the bare driver pod of attempt 2 or later of a
 * kernel (its kernel id and attempt labels), its own token and the Secret that holds it, mounted
 * as the first attempt's is. Undefined for anything else, or without the gateway's secret.
 */
export function retryLauncherCredential(pod: V1Pod, gatewaySecret: string | undefined): LauncherCredential | undefined {
  const labels = pod.metadata?.labels ?? {};
  const kernelId = labels[KERNEL_ID_LABEL_KEY];
  const attempt = Number(labels[LABEL_ATTEMPT]);
  const podName = pod.metadata?.name;
  if (!gatewaySecret || !kernelId || !podName || !Number.isInteger(attempt) || attempt < 2) return undefined;
  const secretName = launcherSecretName(podName);
  return { pod: withLauncherSecret(pod, secretName), secretName, token: attemptLauncherToken(gatewaySecret, kernelId, attempt) };
}

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
