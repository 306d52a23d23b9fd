// What local mode builds against the Spark it runs, at first need: the gates of Spark's own
// servers (ui-gate.ts, connect-gate.ts: small Java classes compiled with the machine's JDK
// tools) and Spark's static files (spark-static.ts). Each is built once into the service's cache,
// in a folder of its own named by what it depends on, made under a temporary name and renamed
// when complete: a build cut short is never taken for a finished one, and two services building
// the same thing at once keep either's.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cacheDir } from '../../lib/cache-dir.js';

export interface RunResult { ok: boolean; out: string; missing: boolean }

/** Runs a program to its end: whether it succeeded, what it printed, and whether it was not found at all. */
export function run(command: string, args: string[], timeoutMs = 300_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) =>
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

/**
 * A JDK tool: the command on PATH (a JDK's), else its module run by `java` (a JRE that ships the
 * module, as Debian's does: jdk.compiler, jdk.jartool).
 */
async function jdkTool(tool: { command: string; module: string; what: string }, args: string[]): Promise<void> {
  const direct = await run(tool.command, args);
  if (direct.ok) return;
  if (!direct.missing) throw new Error(`${tool.command} failed: ${direct.out}`);
  const viaJava = await run('java', ['-m', tool.module, ...args]);
  if (!viaJava.ok) throw new Error(`no ${tool.what} (install a JDK: apt-get install openjdk-17-jdk-headless): ${viaJava.out}`);
}

const JAVAC = { command: 'javac', module: 'jdk.compiler/com.sun.tools.javac.Main', what: 'Java compiler' };
const JAR = { command: 'jar', module: 'jdk.jartool/sun.tools.jar.Main', what: 'jar tool' };

/**
 * The cache folder `folder`, made by `build` into an empty folder once; what is there when
 * complete is kept for every later call (`stamp` is written beside it, for whoever looks).
 */
export async function cachedBuild(folder: string, stamp: string, build: (work: string) => Promise<void>): Promise<string> {
  const out = join(cacheDir(), folder);
  if (existsSync(join(out, '.complete'))) return out;
  const work = `${out}.${process.pid}.${randomBytes(4).toString('hex')}`;
  mkdirSync(work, { recursive: true });
  try {
    await build(work);
    writeFileSync(join(work, '.complete'), `${stamp}\n`);
    try { renameSync(work, out); } catch { if (!existsSync(join(out, '.complete'))) throw new Error(`could not keep the build in ${out}`); }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

export interface JavaBuild {
  /** The cache folder's name before its hash (`ui-gate`). */
  name: string;
  /** The source's file name, its public class's (`ServiceGate.java`). */
  fileName: string;
  source: string;
  /** The class path it is compiled against (Spark's jars). */
  classpath: string;
  /** The Spark version it is built for (part of the cache's key with the source). */
  version: string;
  /** Also pack the classes into `NAME.jar` in the folder (for `spark.jars`, which takes jars only). */
  jar?: boolean;
}

/** The cache folder of a compiled class (its classes in `classes/`, and `NAME.jar` when asked): built once per source and Spark version. */
export function buildJava(build: JavaBuild): Promise<string> {
  const hash = createHash('sha256').update(`${build.source}\0${build.version}${build.jar ? '\0jar' : ''}`).digest('hex').slice(0, 12);
  return cachedBuild(`${build.name}-${hash}`, build.version, async (work) => {
    mkdirSync(join(work, 'src'));
    writeFileSync(join(work, 'src', build.fileName), build.source);
    await jdkTool(JAVAC, ['-nowarn', '-proc:none', '--release', '17', '-cp', build.classpath, '-d', join(work, 'classes'), join(work, 'src', build.fileName)]);
    if (build.jar) await jdkTool(JAR, ['--create', '--file', join(work, `${build.name}.jar`), '-C', join(work, 'classes'), '.']);
  });
}
