// The service's gate on a Spark 3.x Connect server, as Spark properties. 3.x's server checks no
// token of its own (Spark 4's does: connect-server-token.ts), so its driver gets a gRPC
// interceptor of the service's (cluster/local/connect-gate/ConnectGate.java) that asks every call
// for the token that driver was given. Local mode compiles it at first need and puts it on every
// 3.x Connect server driver's command line (cluster/local/spark-command.ts); in Kubernetes mode
// the 3.x runtime image carries it beside the Connect server's jar (images/build.sh), and a
// session's submission names both (connect/server-app.ts). Both go through connectGateConf, so a
// server is gated the same way wherever it runs. Pure.

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

/** `list` (comma-separated) without `item`, the empty entries dropped. */
const others = (list: string | undefined, item: string): string[] => (list ?? '').split(',').map((part) => part.trim()).filter((part) => part !== '' && part !== item);

/**
 * The two properties that put the gate on a 3.x Connect server whose driver's own properties
 * are `own` (what its pod, template or submission said of them): the gate's jar first in
 * `spark.jars` (it must load beside the server's shaded gRPC, not on the system class path) and
 * its class last among the interceptors (gRPC runs the last one added first, so it sees every
 * call before Spark's code or the driver's own interceptors), wherever either was before.
 */
export function connectGateConf(own: (name: string) => string | undefined, gateJar: string): Record<string, string> {
  return {
    'spark.jars': [gateJar, ...others(own('spark.jars'), gateJar)].join(','),
    [CONNECT_INTERCEPTORS_CONF]: [...others(own(CONNECT_INTERCEPTORS_CONF), CONNECT_GATE_CLASS), CONNECT_GATE_CLASS].join(','),
  };
}
