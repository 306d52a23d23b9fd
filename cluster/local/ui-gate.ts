// The servlet filter that keeps local mode's History Server for the service alone
// (ui-gate/ServiceGate.java): built at first need against the servlet API of the Spark that
// runs it (javax.servlet for Spark 3, jakarta.servlet for Spark 4), and kept in the service's
// cache under a hash of the source and the Spark version (spark-builds.ts).
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/package-root.js';
import { buildJava, sparkVersion } from './spark-builds.js';

/** The header the service sends with every request to a gated UI (ServiceGate.HEADER). */
export const UI_GATE_HEADER = 'x-submission-service-gate';
/** The JVM's environment variable that holds the secret (ServiceGate.ENV). */
export const UI_GATE_ENV = 'SUBMISSION_SERVICE_UI_GATE';
/** The filter's class, for spark.ui.filters. */
export const UI_GATE_CLASS = 'submissionservice.ServiceGate';

const SOURCE = join(packageRoot, 'cluster', 'local', 'ui-gate', 'ServiceGate.java');

/** A new secret for one gated server (random, hex: a header value as it is). */
export const newGateSecret = (): string => randomBytes(32).toString('hex');

/** The filter's source for a Spark version: its servlet API's package written in. */
export function gateSource(template: string, version: string): string {
  const servlet = Number(version.split('.')[0]) >= 4 ? 'jakarta.servlet' : 'javax.servlet';
  return template.replaceAll('SERVLET_PACKAGE', servlet);
}

/** The folder that holds the built filter for this Spark (spark-builds.ts): built once per source and version. */
export async function buildUiGate(jars: string): Promise<string> {
  const version = sparkVersion(readdirSync(jars));
  if (!version) throw new Error(`no spark-core jar in ${jars}`);
  const source = gateSource(readFileSync(SOURCE, 'utf8'), version);
  return buildJava({ name: 'ui-gate', fileName: 'ServiceGate.java', source, classpath: join(jars, '*'), version });
}

/** The classes folder of a built filter (what the JVM's classpath names). */
export const gateClasses = (built: string): string => join(built, 'classes');
