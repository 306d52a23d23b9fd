// A sandboxed driver's temporary files are its work dir's (cluster/local/driver-temp.ts), with real
// Spark 3.5.7 and 4.2.0 in local mode, the real `submission-service local` as root with bubblewrap
// (the sandbox's /tmp a 256 MiB tmpfs): a plain driver of each version, its JVM's java.io.tmpdir,
// a temp file made there, its Python's and its Python workers' tempfile all below its work dir
// (`/tmp/app/tmp` inside); what is left in the sandbox's own /tmp is listed (after the change only
// the JVM's perf data file, 32 KiB at a fixed /tmp path, for both versions). A Connect server's
// staged artifacts: sandbox-temp-connect.test.ts.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const VERSIONS = ['3.5.7', '4.2.0'];
const canSandbox = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0 ? false : 'needs root (the work dir\'s cap) and bubblewrap';
const skip = !realSpark() ? 'needs the Spark virtualenv' : canSandbox;

/** Where the driver's temp files go, by the JVM, Python and a Python worker; then what the sandbox's /tmp holds. */
const PROBE = `import os, tempfile
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
jvm = spark._jvm
print("PROBE jvm", jvm.java.lang.System.getProperty("java.io.tmpdir"), flush=True)
print("PROBE file", jvm.java.io.File.createTempFile("probe", ".tmp").getAbsolutePath(), flush=True)
print("PROBE python", tempfile.gettempdir(), flush=True)
print("PROBE hadoop", spark._jsc.hadoopConfiguration().get("hadoop.tmp.dir"), flush=True)
print("PROBE worker", spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("tempfile").gettempdir()).collect()[0], flush=True)
spark.range(200000).selectExpr("id % 97 as k").groupBy("k").count().toPandas()
left = 0
for folder, dirs, files in os.walk("/tmp"):
    dirs[:] = [d for d in dirs if os.path.join(folder, d) != "/tmp/app"]
    for name in files:
        path = os.path.join(folder, name)
        try: size = os.lstat(path).st_size
        except OSError: continue
        left += size
        print("TMP", path, size, flush=True)
print("PROBE left", left, flush=True)
`;

async function service(t: Test) {
  const dir = mkdtempSync('/var/tmp/subsvc-temp-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o711); // the driver's user reads its main file (the data dir below stays 0700)
  const main = join(dir, 'probe.py');
  writeFileSync(main, PROBE, { mode: 0o644 });
  const dataDir = join(dir, 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, admin: store.create('admin', 'platform').key };
  // A user key: the service serves one only with the sandbox on.
  const api = await startService(t, { dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--auth', 'on', '--cores', '2'] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  return { main, alice: as(keys.alice), admin: as(keys.admin) };
}

t.test('a sandboxed driver of each version makes its temp files below its work dir', { skip, timeout: 900_000 }, async (t) => {
  const { main, alice, admin } = await service(t);
  for (const version of VERSIONS) {
    const created = await alice('POST', '/api/apps/', { jobName: 'temps', configOverrides: { type: 'Python', mainApplicationFile: `local://${main}`, engineVersion: version } });
    t.equal(created.status, 201, created.status === 201 ? `${version}: submitted` : created.text);
    const name = created.json.appName as string;
    // A first 4.2 application here waits for its virtualenv (pip: minutes on a cold cache).
    const ended = await waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 600_000, intervalMs: 500 });
    const log = (await alice('GET', `/api/apps/${name}/log`)).text;
    t.equal(ended.state, 'COMPLETED', `${version}: COMPLETED (log tail: ${log.slice(-1500)})`);
    const probe = (what: string) => new RegExp(`^PROBE ${what} (\\S+)$`, 'm').exec(log)?.[1];
    t.equal(probe('jvm'), '/tmp/app/tmp', `${version}: the JVM's java.io.tmpdir`);
    t.match(probe('file'), /^\/tmp\/app\/tmp\/probe\d+\.tmp$/, `${version}: a temp file the JVM makes`);
    t.equal(probe('python'), '/tmp/app/tmp', `${version}: the driver's Python`);
    t.equal(probe('hadoop'), '/tmp/app/tmp', `${version}: Hadoop's temp dir (S3A's upload buffers)`);
    t.equal(probe('worker'), '/tmp/app/tmp', `${version}: a Python worker`);
    t.comment(`${version}: left in the sandbox's /tmp: ${probe('left')} bytes\n${[...log.matchAll(/^TMP .*$/gm)].map((m) => m[0]).join('\n')}`);
  }
});
