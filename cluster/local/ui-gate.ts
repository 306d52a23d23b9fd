// The servlet filter that keeps local mode's History Server for the service alone
// (ui-gate/ServiceGate.java): built at first need against the servlet API of the Spark that
// runs it (javax.servlet for Spark 3, jakarta.servlet for Spark 4), with the machine's javac
// (or the JDK compiler module of its `java`, which Debian's JRE carries), and kept in the
// service's cache under a hash of the source and the Spark version.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheDir } from '../../lib/cache-dir.js';
import { packageRoot } from '../../lib/package-root.js';

/** The header the service sends with every request to a gated UI (ServiceGate.HEADER). */
export const UI_GATE_HEADER = 'x-submission-service-gate';
/** The JVM's environment variable that holds the secret (ServiceGate.ENV). */
export const UI_GATE_ENV = 'SUBMISSION_SERVICE_UI_GATE';
/** The filter's class, for spark.ui.filters. */
export const UI_GATE_CLASS = 'submissionservice.ServiceGate';

const SOURCE = join(packageRoot, 'cluster', 'local', 'ui-gate', 'ServiceGate.java');

/** A new secret for one gated server (random, hex: a header value as it is). */
export const newGateSecret = (): string => randomBytes(32).toString('hex');

function run(command: string, args: string[]): Promise<{ ok: boolean; out: string; missing: boolean }> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8', timeout: 300_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ ok: !error, out: `${stdout}${stderr}`.trim(), missing: (error as NodeJS.ErrnoException | null)?.code === 'ENOENT' }));
  });
}

/** The `jars` folder of the Spark that `sparkClass` (and `python`'s pyspark) runs. */
export async function sparkJars(sparkClass: string, python?: string): Promise<string> {
  if (python) {
    const found = await run(python, ['-c', 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))']);
    if (found.ok && existsSync(found.out)) return found.out;
  }
  const home = process.env.SPARK_HOME ?? (sparkClass.includes('/') ? dirname(dirname(realpathSync(sparkClass))) : undefined);
  if (home && existsSync(join(home, 'jars'))) return join(home, 'jars');
  throw new Error(`could not find the jars of the Spark beside ${sparkClass}`);
}

/** Spark's version from its spark-core jar's name (`spark-core_2.12-3.5.7.jar` → 3.5.7). */
export function sparkVersion(jarNames: string[]): string | undefined {
  for (const name of jarNames) {
    const match = /^spark-core_[0-9.]+-([0-9][0-9A-Za-z.-]*)\.jar$/.exec(name);
    if (match) return match[1];
  }
  return undefined;
}

/** The filter's source for a Spark version: its servlet API's package written in. */
export function gateSource(template: string, version: string): string {
  const servlet = Number(version.split('.')[0]) >= 4 ? 'jakarta.servlet' : 'javax.servlet';
  return template.replaceAll('SERVLET_PACKAGE', servlet);
}

/** javac on PATH, else the compiler module of `java` (a JRE that ships jdk.compiler, as Debian's does). */
async function compile(args: string[]): Promise<void> {
  const javac = await run('javac', args);
  if (javac.ok) return;
  if (!javac.missing) throw new Error(`javac failed: ${javac.out}`);
  const viaJava = await run('java', ['-m', 'jdk.compiler/com.sun.tools.javac.Main', ...args]);
  if (!viaJava.ok) throw new Error(`no Java compiler (install a JDK: apt-get install openjdk-17-jdk-headless): ${viaJava.out}`);
}

/** The classpath entry (a folder) that holds the built filter for this Spark; built once per source and version. */
export async function buildUiGate(jars: string): Promise<string> {
  const version = sparkVersion(readdirSync(jars));
  if (!version) throw new Error(`no spark-core jar in ${jars}`);
  const source = gateSource(readFileSync(SOURCE, 'utf8'), version);
  const hash = createHash('sha256').update(source).update(`\0${version}`).digest('hex').slice(0, 12);
  const out = join(cacheDir(), `ui-gate-${hash}`);
  if (existsSync(join(out, '.complete'))) return out;
  const work = `${out}.${process.pid}.${randomBytes(4).toString('hex')}`;
  mkdirSync(join(work, 'src'), { recursive: true });
  try {
    writeFileSync(join(work, 'src', 'ServiceGate.java'), source);
    await compile(['-nowarn', '--release', '17', '-cp', join(jars, '*'), '-d', join(work, 'classes'), join(work, 'src', 'ServiceGate.java')]);
    writeFileSync(join(work, '.complete'), `${version}\n`);
    try { renameSync(work, out); } catch { if (!existsSync(join(out, '.complete'))) throw new Error(`could not keep the filter in ${out}`); }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

/** The classes folder of a built filter (what the JVM's classpath names). */
export const gateClasses = (built: string): string => join(built, 'classes');
