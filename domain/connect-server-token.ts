// The own token of a Spark Connect session's server (a driver running Spark's
// SparkConnectServer). Spark 4's server asks every call for a pre-shared token (`Authorization:
// Bearer TOKEN`, PreSharedKeyAuthenticationInterceptor) that it reads from its environment; only
// the service knows it, so only the Connect endpoint's relay (connect/relay.ts) is let in, even by
// a process or pod that reaches the server's port. Spark 3.5's server checks nothing by itself: it
// gets the service's interceptor that reads the same variable (connect-gate.ts), built at first
// need in local mode, carried by the 3.x runtime image in Kubernetes mode.
//
// The token is an HMAC of the application's name under a key of the service's, so whoever starts
// the driver and whoever relays to it compute it without storing or passing it around. Local
// mode's key lives in the service's memory (cluster/local/connect-server-token.ts). Kubernetes
// mode's must be the same in every api replica (any replica relays any session) and outlive a
// restart (the driver pods do): it derives from the secret the replicas already share from the
// chart's auth Secret (gateway.secret), under a label of its own, so that no token is ever an
// HMAC some other use of that secret makes (a kernel's launcher token, the gateway's proof).
// There the driver reads the token from a Secret of its own application, `<appName>-connect`,
// that its pod names in its env: not in the Application's config (every key reads it through
// the API), not in the pod's spec, not in Spark's properties (its UI shows them).
// Pure: the derivation, the names, the Secret's shape and the pod's env.
import { createHmac } from 'node:crypto';
import type { V1EnvVar, V1OwnerReference, V1Pod, V1Secret } from '@kubernetes/client-node';
import { applicationTokenSecret } from './app-secret.js';
import { ANNOTATION_OVERRIDES, DRIVER_CONTAINER } from './labels.js';

/** Spark's Connect server main class: the drivers that get the token. */
export const CONNECT_SERVER_CLASS = 'org.apache.spark.sql.connect.service.SparkConnectServer';
/** The environment variable Spark 4's Connect server takes its token from (`spark.connect.authenticate.token` otherwise, which the API would show every key). */
export const CONNECT_SERVER_TOKEN_ENV = 'SPARK_CONNECT_AUTHENTICATE_TOKEN';
/** The key of the token in its Secret. */
export const CONNECT_TOKEN_SECRET_KEY = 'token';

/** What the derived key is for: no other HMAC under the shared secret is made over this text. */
const KEY_LABEL = 'submission-service: Spark Connect server tokens (Kubernetes mode)';

/** Kubernetes mode's key of the servers' tokens, from the secret every api replica shares (never that secret itself). */
export const connectTokenKey = (sharedSecret: string): Buffer => createHmac('sha256', sharedSecret).update(KEY_LABEL).digest();

/** The token of the Connect server run by application `appName` under `key` (hex: a header value as it is). */
export const connectServerToken = (key: Buffer, appName: string): string => createHmac('sha256', key).update(appName).digest('hex');

/** The Secret (in the applications namespace, owned by the Application) that holds one server's token. */
export const connectTokenSecretName = (appName: string): string => `${appName}-connect`;

/**
 * Whether a bare driver pod is a Connect server's: its overrides (what the submission itself
 * said, as the endpoint submits every session and warm server) run Spark's Connect server.
 */
export function runsConnectServer(bare: V1Pod): boolean {
  const raw = bare.metadata?.annotations?.[ANNOTATION_OVERRIDES];
  if (!raw) return false;
  try {
    return (JSON.parse(raw) as { mainClass?: unknown } | null)?.mainClass === CONNECT_SERVER_CLASS;
  } catch {
    return false; // admission refuses it anyway
  }
}

/** The driver's variable: the token read from the application's Secret by the kubelet (the pod waits for a missing Secret). */
export const connectTokenEnv = (secretName: string): V1EnvVar =>
  ({ name: CONNECT_SERVER_TOKEN_ENV, valueFrom: { secretKeyRef: { name: secretName, key: CONNECT_TOKEN_SECRET_KEY } } });

/**
 * The bare pod whose driver container takes its token from `secretName`, over any variable of
 * that name it had (admission keeps the pod's own env over the config's: domain/driver-pod.ts).
 */
export function withConnectServerToken(pod: V1Pod, secretName: string): V1Pod {
  const spec = pod.spec ?? { containers: [] };
  const containers = spec.containers.map((c) => (c.name === DRIVER_CONTAINER
    ? { ...c, env: [...(c.env ?? []).filter((e) => e.name !== CONNECT_SERVER_TOKEN_ENV), connectTokenEnv(secretName)] }
    : c));
  return { ...pod, spec: { ...spec, containers } };
}

/** The Secret of application `appName`'s token: immutable, owned by the Application (the garbage collector removes it with it). */
export function connectTokenSecret(appName: string, token: string, owner: Omit<V1OwnerReference, 'controller'>): V1Secret {
  return applicationTokenSecret(connectTokenSecretName(appName), appName, { key: CONNECT_TOKEN_SECRET_KEY, token }, owner);
}
