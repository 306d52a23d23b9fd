// Where a sandboxed driver's temporary files go: a folder of its own work dir, not the sandbox's
// /tmp. Spark's scratch (shuffle, spills, cached blocks, pyspark's broadcast and parallelize
// files) follows SPARK_LOCAL_DIRS, the work dir already; what follows java.io.tmpdir (the JVM's
// default, /tmp) or TMPDIR (Python's tempfile) did not: a Connect server stages every uploaded
// artifact there before it moves it (SparkConnectAddArtifactsHandler's staging dir; a large
// local relation is such an artifact, a `cache/` one), spark-submit downloads a remote main
// file or jar there, the JVM unpacks its native libraries there, and pyspark, pandas-on-Spark
// and MLlib take their temp dirs there; Hadoop's hadoop.tmp.dir (/tmp/hadoop-USER) holds S3A's
// upload buffers (fs.s3a.buffer.dir), so a large write to object storage went there too. In the sandbox /tmp is a 256 MiB tmpfs (sandbox.ts), so
// one such file over it failed the driver, and what the driver left there escaped its work
// dir's cap. In the work dir they count against its cap and go with it. Both Spark versions
// alike: the setting is the JVM's and Python's, not Spark's. Unsandboxed drivers keep the
// machine's /tmp: their work dir's real path can be long, and Python puts Unix sockets (108
// bytes at most) into TMPDIR (multiprocessing's listeners); the sandbox's is short.
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type DriverSandbox, SANDBOX_WORK_DIR } from './sandbox.js';

/** The folder below a driver's work dir that holds its temporary files. */
const TEMP_FOLDER = 'tmp';

/** The driver's temp dir as it sees it in the sandbox. */
export const SANDBOX_TEMP_DIR = `${SANDBOX_WORK_DIR}/${TEMP_FOLDER}`;

/** What points a driver's temporary files into its work dir: its environment's additions and one JVM option. */
export interface DriverTemp {
  env: Record<string, string>;
  /** For the driver's JVM (spark.driver.extraJavaOptions: in client mode the spark-submit JVM is the driver). */
  javaOption: string;
  /** Spark properties set over the pod's own: Hadoop's temp dir, where S3A buffers its uploads. */
  conf: Record<string, string>;
}

/** The temp settings of a driver (pure); undefined: an unsandboxed one keeps the machine's. */
export function driverTemp(sandbox: DriverSandbox | undefined): DriverTemp | undefined {
  if (!sandbox) return undefined;
  return { env: { TMPDIR: SANDBOX_TEMP_DIR }, javaOption: `-Djava.io.tmpdir=${SANDBOX_TEMP_DIR}`, conf: { 'spark.hadoop.hadoop.tmp.dir': SANDBOX_TEMP_DIR } };
}

/** Makes the driver's temp folder before it starts, its user's (Python falls back to /tmp when TMPDIR is missing; the JVM does not). */
export function prepareTempDir(sandbox: DriverSandbox, workDir: string): void {
  const dir = join(workDir, TEMP_FOLDER);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (sandbox.user) chownSync(dir, sandbox.user.uid, sandbox.user.gid);
}
