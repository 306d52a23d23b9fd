// A sandboxed driver's temporary files are its work dir's (cluster/local/driver-temp.ts), with real
// Spark 3.5.7 and 4.2.0 in local mode, the real `submission-service local` as root with bubblewrap
// (the sandbox's /tmp a 256 MiB tmpfs). A plain driver of each version: its JVM's java.io.tmpdir,
// a temp file made there, its Python's and its Python workers' tempfile are all below its
// work dir (`/tmp/app/tmp` inside); what is left in the sandbox's own /tmp is listed. A Connect
// session of each version adds a 300 MiB file as an artifact: the server stages what it receives
// in java.io.tmpdir, which was the 256 MiB /tmp (on main a 3.5 server stopped at 268,271,616 of
// 314,572,800 bytes, "Missing data chunks", and the client got UNKNOWN); now the work dir (its
// cap 1 GiB). After the change only the JVM's perf data file (32 KiB, a fixed /tmp path) is left
// in /tmp, for both versions.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { connectClientPython, connectPortOf, runConnectClientOf } from '../connect/connect-client.js';

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
  // A user key: the service serves one only with the sandbox on. No share per key: its two sessions run side by side.
  const api = await startService(t, { dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--auth', 'on', '--cores', '2', '--key-core-share', '0', '--connect-port', '0'] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  return { api, main, keys, alice: as(keys.alice), admin: as(keys.admin) };
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
    t.equal(probe('worker'), '/tmp/app/tmp', `${version}: a Python worker`);
    t.comment(`${version}: left in the sandbox's /tmp: ${probe('left')} bytes\n${[...log.matchAll(/^TMP .*$/gm)].map((m) => m[0]).join('\n')}`);
  }
});

const noClients = VERSIONS.every((version) => connectClientPython(version)) ? false : 'needs the 3.5 and 4.2 Connect clients (SETUP_TEST_TOOLS=1 scripts/setup.sh)';

t.test('a Connect session of each version takes a 300 MiB artifact (more than the sandbox\'s /tmp holds)', { skip: skip || noClients, timeout: 900_000 }, async (t) => {
  const { api, keys, admin } = await service(t);
  const port = connectPortOf(api.output());
  for (const version of VERSIONS) {
    const template = `v${version.replaceAll('.', '')}`;
    t.equal((await admin('POST', '/api/config-templates/', { name: template, config: { engineVersion: version } })).status, 201, `a template of ${version}`);
    // pyspark 3.5 sends a token over TLS only: in plaintext on loopback its key goes as `;x-api-key=` metadata.
    const credential = Number(version.split('.')[0]) >= 4 ? `;token=${keys.alice}` : `;x-api-key=${keys.alice}`;
    const seen = await runConnectClientOf(version, 'artifact', `sc://localhost:${port}/${credential};template=${template};session_id=${randomUUID()}`, '300');
    t.equal(seen.version, version, `a Spark ${version} server`);
    t.equal(seen.added, true, `${version}: the artifact was added (${seen.status ?? ''} ${seen.message ?? ''})`);
    t.equal(seen.count, 10, `${version}: the session still answers`);
  }
});
