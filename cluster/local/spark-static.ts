// Spark's own static files (its UI's scripts, styles and images) from the spark-core jar of the
// Spark that local mode runs, without any driver or History Server: they do not depend on the
// application, so the Spark UI proxy answers an anonymous request for one (a sandboxed page
// fetches them without cookies) from here, the same for every application name, existing or
// not (docs/security.md, "The Spark UI"). Extracted once per Spark version into the service's
// cache (spark-builds.ts, beside the gates' builds), with the venv's Python (zipfile) or `unzip`.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readStaticFile, type SparkStaticFile } from '../history/spark-static-path.js';
import { cachedBuild, run, sparkJars, sparkVersion } from './spark-builds.js';

export type { SparkStaticFile } from '../history/spark-static-path.js';

/** Where the UI's files are inside spark-core's jar. */
const JAR_FOLDER = 'org/apache/spark/ui/static';

// Only the UI's folder, each entry through zipfile's own name sanitising.
const EXTRACT = [
  'import sys, zipfile',
  'jar, out, prefix = sys.argv[1:4]',
  'with zipfile.ZipFile(jar) as z:',
  '    for info in z.infolist():',
  '        if info.filename.startswith(prefix) and not info.is_dir() and ".." not in info.filename.split("/"):',
  '            z.extract(info, out)',
].join('\n');

async function extract(jar: string, out: string, python: string | undefined): Promise<void> {
  const viaPython = await run(python ?? 'python3', ['-c', EXTRACT, jar, out, `${JAR_FOLDER}/`], 120_000);
  if (viaPython.ok) return;
  const viaUnzip = await run('unzip', ['-qq', '-o', jar, `${JAR_FOLDER}/*`, '-d', out], 120_000);
  if (!viaUnzip.ok) throw new Error(`could not extract Spark's static files from ${jar}: ${viaPython.out}; ${viaUnzip.out}`);
}

/** The folder of Spark's static files for the Spark in `jars`: extracted once per version, kept in the cache. */
export async function extractSparkStatic(jars: string, python?: string): Promise<string> {
  const names = readdirSync(jars);
  const version = sparkVersion(names);
  const jar = names.find((name) => /^spark-core_.*\.jar$/.test(name));
  if (!version || !jar) throw new Error(`no spark-core jar in ${jars}`);
  const out = await cachedBuild(`spark-static-${version}`, version, (work) => extract(join(jars, jar), work, python));
  return join(out, JAR_FOLDER);
}

/** A Spark whose jars hold the static files: its spark-class and the Python of its pyspark. */
export interface StaticSpark { sparkClass: string; python?: string }

/**
 * Spark's static files of local mode's Sparks, extracted at the first request for each version
 * (again after a failure). Versions ship different files under the same names (4.x: Bootstrap 5,
 * other DataTables, new pages' scripts), so a page's links name its version
 * (dashboard/spark-ui-static.ts); none named: the base Spark's (setup's, the default version); a
 * version not offered, or whose virtualenv is not prepared, has none (nothing is built for a request).
 */
export class LocalSparkStatic {
  private readonly roots = new Map<string, Promise<string>>();

  constructor(private readonly options: StaticSpark & { sparkOf?: (version: string) => Promise<StaticSpark | undefined> }) {}

  /** `read`, bound: what the Spark UI proxy calls (its sparkStatic option). */
  readonly reader = (rest: string, version?: string): Promise<SparkStaticFile | undefined> => this.read(rest, version);

  /** The file `rest` (`/static/…`) names for Spark `version`, or undefined: none such, or Spark's files are not at hand. */
  async read(rest: string, version?: string): Promise<SparkStaticFile | undefined> {
    const root = await this.folder(version).catch(() => undefined);
    return root ? readStaticFile(root, rest) : undefined;
  }

  private async folder(version: string | undefined): Promise<string> {
    const spark = version === undefined ? this.options : await this.options.sparkOf?.(version).catch(() => undefined);
    if (!spark) throw new Error(`no Spark ${version} prepared here`);
    const key = spark.sparkClass;
    let root = this.roots.get(key);
    if (!root) {
      root = sparkJars(spark.sparkClass, spark.python).then((jars) => extractSparkStatic(jars, spark.python));
      root.catch(() => { this.roots.delete(key); });
      this.roots.set(key, root);
    }
    return root;
  }
}
