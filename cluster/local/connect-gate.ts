// The gate on local mode's Spark 3.5 Connect servers (connect-gate/ConnectGate.java). Spark 4's
// server checks a pre-shared token itself and listens where it is told (connect/server-app.ts);
// 3.5's has neither an address setting nor authentication, and listens on every interface. So a
// 3.5 server driver gets the gate as a gRPC interceptor (spark.connect.grpc.interceptor.classes)
// that asks every call for the same token Spark 4 reads (connect-server-token.ts). The gate is
// compiled at first need against the server's jar the service fetched ahead (never one a
// submission names), packed as a jar (spark.jars takes jars only: the class must load beside the
// server's shaded gRPC), and kept in the service's cache (spark-builds.ts). images/build.sh builds
// the same jar here for the 3.x runtime images (Kubernetes mode's sessions).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/package-root.js';
import { CONNECT_SERVER_CLASS } from './connect-server-token.js';
import { buildJava, sparkJars, sparkVersion } from './spark-builds.js';

/** The interceptor's class and the setting that names it (domain/connect-gate.ts: the properties of the gate, Kubernetes mode's too). */
export { CONNECT_GATE_CLASS, CONNECT_INTERCEPTORS_CONF } from '../../domain/connect-gate.js';

const SOURCE = join(packageRoot, 'cluster', 'local', 'connect-gate', 'ConnectGate.java');

/**
 * Spark 3.5's Connect server jar fetched ahead by scripts/setup.sh (SUBMISSION_SERVICE_CONNECT_JARS:
 * a directory of `spark-connect_2.12-VERSION.jar`); undefined: the driver resolves the artifact.
 */
export function connectServerJar(version: string): string | undefined {
  const dir = process.env.SUBMISSION_SERVICE_CONNECT_JARS;
  const jar = dir ? join(dir, `spark-connect_2.12-${version}.jar`) : undefined;
  return jar && existsSync(jar) ? jar : undefined;
}

/** The gate packed as a jar, compiled against the Connect server's jar of Spark `version`: once per source and version. */
export async function buildConnectGate(serverJar: string, version: string): Promise<string> {
  const source = readFileSync(SOURCE, 'utf8');
  const built = await buildJava({ name: 'connect-gate', fileName: 'ConnectGate.java', source, classpath: serverJar, version, jar: true });
  return join(built, 'connect-gate.jar');
}

export interface ConnectGateOptions {
  /** Where the Connect server's jar of a Spark version is (connectServerJar). */
  serverJar?: (version: string) => string | undefined;
  build?: (serverJar: string, version: string) => Promise<string>;
}

/** The gate's jar per Spark (its spark-submit): built at the first Connect server driver of that Spark. */
export class ConnectGates {
  private readonly built = new Map<string, Promise<string | undefined>>();

  constructor(private readonly options: ConnectGateOptions = {}) {}

  /**
   * The gate's jar for a driver of `spark` whose main class is `mainClass`, or undefined when it
   * needs none: not Spark's Connect server, a Spark 4 (its own token check), or no Spark's jars
   * beside spark-submit (a program that only stands in for it). Rejects when a 3.x server cannot
   * be gated: then the driver does not start (a Connect server never runs open).
   */
  forRun(spark: { sparkSubmit: string; python?: string }, mainClass: string | undefined): Promise<string | undefined> {
    if (mainClass !== CONNECT_SERVER_CLASS) return Promise.resolve(undefined);
    let jar = this.built.get(spark.sparkSubmit);
    if (!jar) {
      jar = this.gateFor(spark);
      this.built.set(spark.sparkSubmit, jar);
      jar.catch(() => this.built.delete(spark.sparkSubmit));
    }
    return jar;
  }

  private async gateFor(spark: { sparkSubmit: string; python?: string }): Promise<string | undefined> {
    const jars = await sparkJars(spark.sparkSubmit, spark.python).catch(() => undefined);
    const version = jars === undefined ? undefined : sparkVersion(readdirSync(jars));
    if (version === undefined || Number(version.split('.')[0]) >= 4) return undefined;
    const serverJar = (this.options.serverJar ?? connectServerJar)(version);
    if (!serverJar) {
      throw new Error(`Spark ${version}'s Connect server runs only behind the service's gate, which is built against its jar fetched ahead `
        + `(spark-connect_2.12-${version}.jar in SUBMISSION_SERVICE_CONNECT_JARS: scripts/setup.sh fetches it with Maven); it is not there`);
    }
    return (this.options.build ?? buildConnectGate)(serverJar, version);
  }
}
