// What a Connect session's application is: a driver that runs Spark's own Connect server
// (SparkConnectServer, as Spark's sbin/start-connect-server.sh starts it) on a loopback port the
// endpoint picked, from the caller's template. Pure: the endpoint submits what this returns.
import { connectGateConf, type ConnectServerJars } from '../domain/connect-gate.js';
import { CONNECT_SERVER_CLASS } from '../domain/connect-server-token.js';
import { CONNECT_SESSION_LABEL, CONNECT_TEMPLATE_LABEL, CONNECT_WARM_LABEL_KEY } from '../domain/labels.js';

/** Labels of a Connect session's application: how the API, the dashboard and the endpoint tell it (domain/labels.ts). */
export { CONNECT_SERVER_CLASS, CONNECT_SESSION_LABEL, CONNECT_TEMPLATE_LABEL };
/** The session label's value on a warm pool's server (its session id is the endpoint's log's: "from the warm pool"). */
export const WARM_SESSION = 'warm';
/** The template label's value when the call named none (the service's defaults). */
export const NO_TEMPLATE = 'none';

/**
 * The Spark properties that put the Connect server on the driver's class path. Spark 4 ships it
 * in its distribution; 3.x needs the `spark-connect_2.12` artifact of the same version: the jar
 * of `jars` (local mode: fetched ahead onto this machine, scripts/setup.sh; Kubernetes mode: in
 * the runtime image, images/build.sh), else Spark resolves the artifact at the driver's start.
 * With `jars.gate`, the service's gate on it too (domain/connect-gate.ts; local mode adds its own
 * at the driver's start instead, cluster/local/spark-command.ts).
 */
export function connectServerConf(version: string, jars: ConnectServerJars | undefined): Record<string, string> {
  const major = Number(version.split('.')[0]);
  if (major >= 4) return {};
  if (!jars) return { 'spark.jars.packages': `org.apache.spark:spark-connect_2.12:${version}` };
  if (!jars.gate) return { 'spark.jars': jars.server };
  return connectGateConf((name) => (name === 'spark.jars' ? jars.server : undefined), jars.gate);
}

export interface SessionAppInput {
  sessionId: string;
  template: string | undefined;
  /** The template's Spark version (or the service's default). */
  version: string;
  /** The loopback port the server listens on. */
  port: number;
  /** The 3.x server's jars (connectServerConf); undefined: Spark resolves the artifact. */
  jars?: ConnectServerJars;
  /** The address the server listens on (local mode: loopback; Spark 4 only); undefined: every interface (a pod's). */
  bindAddress?: string;
}

/** A warm pool's server (connect/warm-pool.ts): no session yet, labelled with its pool's template (domain's CONNECT_WARM_LABEL_KEY). */
export function warmSubmission(input: Omit<SessionAppInput, 'sessionId'>): Record<string, unknown> & { jobName: string; labels: Record<string, string> } {
  const submission = sessionSubmission({ ...input, sessionId: WARM_SESSION });
  const labels = { ...submission.labels as Record<string, string>, [CONNECT_WARM_LABEL_KEY]: input.template ?? NO_TEMPLATE };
  return { ...submission, jobName: 'connect-warm', labels };
}

/** The Spark property that tells a session's Connect server its port. */
const SERVER_PORT_CONF = 'spark.connect.grpc.binding.port';

/** The POST /api/apps/ body of a session's application. */
export function sessionSubmission(input: SessionAppInput): Record<string, unknown> {
  return {
    jobName: `connect-${input.sessionId.toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 12)}`,
    ...(input.template ? { configTemplateName: input.template } : {}),
    configOverrides: {
      // Whatever the template runs, this driver runs the Connect server ("spark-internal": no file of its own).
      type: 'Scala',
      mainClass: CONNECT_SERVER_CLASS,
      mainApplicationFile: 'spark-internal',
      arguments: [],
      engineConf: {
        ...connectServerConf(input.version, input.jars),
        [SERVER_PORT_CONF]: String(input.port),
        ...(input.bindAddress && Number(input.version.split('.')[0]) >= 4 ? { 'spark.connect.grpc.binding.address': input.bindAddress } : {}),
      },
    },
    labels: { [CONNECT_SESSION_LABEL]: input.sessionId, [CONNECT_TEMPLATE_LABEL]: input.template ?? NO_TEMPLATE },
  };
}

/** The template a session's application was started with (its label), undefined for none. */
export function templateOf(app: { labels?: Record<string, string> }): string | undefined {
  const label = app.labels?.[CONNECT_TEMPLATE_LABEL];
  return label === undefined || label === NO_TEMPLATE ? undefined : label;
}

/** The port a session's application told its Connect server (undefined when its config does not say). */
export function serverPortOf(app: { config?: { engineConf?: Record<string, string> } }): number | undefined {
  const port = Number(app.config?.engineConf?.[SERVER_PORT_CONF]);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}
