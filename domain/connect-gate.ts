// The service's gate on a Spark 3.x Connect server, as Spark properties. 3.x's server checks no
// token of its own (Spark 4's does: connect-server-token.ts), so its driver gets a gRPC
// interceptor of the service's (cluster/local/connect-gate/ConnectGate.java) that asks every call
// for the token that driver was given. Local mode compiles it at first need and puts it on every
// 3.x Connect server driver's command line (cluster/local/spark-command.ts); in Kubernetes mode
// the 3.x runtime image carries it beside the Connect server's jar (images/build.sh), and a
// session's submission names both (connect/server-app.ts). Both go through connectGateConf, so a
// server is gated the same way wherever it runs. A session's submission and its template each
// name jars and interceptors: effective-config.ts merges the two lists (mergeConnectServerConf)
// where any other property's submission value replaces the template's. Pure.
import type { ApplicationConfig } from '../schemas/index.js';
import { CONNECT_SERVER_CLASS } from './connect-server-token.js';

/** The interceptor's class. */
export const CONNECT_GATE_CLASS = 'submissionservice.ConnectGate';
/** Spark 3.5's setting of extra interceptors (comma-separated classes with a no-argument constructor). */
export const CONNECT_INTERCEPTORS_CONF = 'spark.connect.grpc.interceptor.classes';

/** Where images/build.sh puts the two jars in a Spark 3.x runtime image (images/spark-runtime/connect.Containerfile). */
export const IMAGE_CONNECT_DIR = '/opt/submission-service/connect';

/** The jars a 3.x Connect server's driver is given: Spark's server, and the gate when it gets one. */
export interface ConnectServerJars {
  server: string;
  gate?: string;
}

/**
 * The jars of a 3.x Connect server in a runtime image images/build.sh made, as drivers name
 * them (`local://`: in the image, nothing fetched). `gated`: whether its driver gets the token
 * the gate asks for (Kubernetes mode: only with the replicas' shared secret; a gate without a
 * token would refuse every call, the relay's too).
 */
export function imageConnectJars(gated: boolean): ConnectServerJars {
  const server = `local://${IMAGE_CONNECT_DIR}/spark-connect.jar`;
  return gated ? { server, gate: `local://${IMAGE_CONNECT_DIR}/connect-gate.jar` } : { server };
}

/** Spark's comma-separated list of jars a driver puts on its class path. */
export const SPARK_JARS_CONF = 'spark.jars';

/** A driver's Spark properties, one by name (undefined: not set). */
export type ConfLookup = (name: string) => string | undefined;

/** The entries of a comma-separated list, trimmed, the empty ones dropped. */
const entries = (list: string | undefined): string[] => (list ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '');
/** `items` without repeats, each where it first came. */
const unique = (items: string[]): string[] => [...new Set(items)];

/**
 * A Connect server driver's two list properties: the service's (`ours`: the server's jar, the
 * gate's jar and class) merged with the driver's own (`own`: what its template, or the line its
 * pod already has, says), never one replacing the other, so a template's JDBC driver, Delta jar
 * or audit interceptor stays on a 3.5 session. Ours come first in `spark.jars` (a class both
 * lists hold, the gate's included, loads from ours) and last among the interceptors: Spark adds
 * them to gRPC in the list's order and gRPC runs the last one added first, so the gate sees every
 * call before the driver's own interceptors or Spark's code. Whatever `own` says (the gate left
 * out, named first, another jar of the gate's name) cannot move ours from those places. Each
 * entry once, in the order it first came; a property neither side sets is left out. Pure.
 */
export function mergeConnectServerConf(own: ConfLookup, ours: ConfLookup): Record<string, string> {
  const merged: Record<string, string> = {};
  const jars = unique([...entries(ours(SPARK_JARS_CONF)), ...entries(own(SPARK_JARS_CONF))]);
  if (jars.length > 0) merged[SPARK_JARS_CONF] = jars.join(',');
  const ourInterceptors = unique(entries(ours(CONNECT_INTERCEPTORS_CONF)));
  const interceptors = [...unique(entries(own(CONNECT_INTERCEPTORS_CONF))).filter((name) => !ourInterceptors.includes(name)), ...ourInterceptors];
  if (interceptors.length > 0) merged[CONNECT_INTERCEPTORS_CONF] = interceptors.join(',');
  return merged;
}

/**
 * The two properties that put the gate on a 3.x Connect server whose driver's own properties
 * are `own` (what its pod, template or submission said of them): mergeConnectServerConf with
 * the gate's jar and class as ours. Local mode applies it to the driver's line at its start,
 * Kubernetes mode's sessions carry it in their submission (connect/server-app.ts).
 */
export function connectGateConf(own: ConfLookup, gateJar: string): Record<string, string> {
  const gate: Record<string, string> = { [SPARK_JARS_CONF]: gateJar, [CONNECT_INTERCEPTORS_CONF]: CONNECT_GATE_CLASS };
  return mergeConnectServerConf(own, (name) => gate[name]);
}

/**
 * `merged` (the template's config with the submission's `overrides` over it) with the two lists
 * of a Connect server driver merged instead of replaced: the submission's are the service's (a
 * session's server and gate jars, connect/server-app.ts), the template's are its own. Any other
 * driver, or a side that sets no Spark properties, is left as merged.
 */
export function withConnectServerLists(merged: ApplicationConfig, template: ApplicationConfig | undefined, overrides: ApplicationConfig | undefined): ApplicationConfig {
  const [own, ours] = [template?.engineConf, overrides?.engineConf];
  if (merged.mainClass !== CONNECT_SERVER_CLASS || !own || !ours) return merged;
  return { ...merged, engineConf: { ...merged.engineConf, ...mergeConnectServerConf((name) => own[name], (name) => ours[name]) } };
}
