// A sandboxed Spark Connect server stages each artifact it receives in its temp dir before it keeps
// it with the session (Spark's AddArtifacts handler, java.io.tmpdir): that was the sandbox's 256 MiB
// /tmp, and on main a 300 MiB artifact was refused (a 3.5 server stopped at 268,271,616 of
// 314,572,800 bytes, "Missing data chunks"; the client got UNKNOWN). Now the work dir's temp
// folder (cluster/local/driver-temp.ts; the work dir's cap is 1 GiB). The real `submission-service
// local` as root with bubblewrap, a user key's Spark 4.2.0 session through the endpoint. One version
// only, for the suite's time: the temp folder is decided in one place for both (driver-temp.ts,
// test/local/driver-temp.test.ts), sandbox-temp.test.ts sees both versions' JVMs use it, and 3.5.7
// took the same 300 MiB artifact when this test ran both (2026-11-29).
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { until } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { connectClientPython, connectPortOf, runConnectClientOf } from '../connect/connect-client.js';

const VERSIONS = ['4.2.0'];
const canSandbox = process.getuid?.() === 0 && spawnSync('bwrap', ['--version']).status === 0 ? false : 'needs root (the work dir\'s cap) and bubblewrap';
const noClients = VERSIONS.every((version) => connectClientPython(version)) ? false : 'needs the 4.2 Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)';
const skip = !realSpark() ? 'needs the Spark virtualenv' : canSandbox || noClients;

interface App { appName: string; state: string; labels?: Record<string, string> }

t.test('a Spark 4.2.0 Connect session takes a 300 MiB artifact (more than the sandbox\'s /tmp holds)', { skip, timeout: 1_100_000 }, async (t) => {
  const dir = mkdtempSync('/var/tmp/subsvc-temp-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, admin: store.create('admin', 'platform').key };
  // A user key: the service serves one only with the sandbox on.
  const api = await startService(t, { dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--auth', 'on', '--cores', '2', '--connect-port', '0'] });
  const call = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  const [alice, admin] = [call(keys.alice), call(keys.admin)];
  const port = connectPortOf(api.output());
  for (const version of VERSIONS) {
    const template = `v${version.replaceAll('.', '')}`;
    t.equal((await admin('POST', '/api/config-templates/', { name: template, config: { engineVersion: version } })).status, 201, `a template of ${version}`);
    // pyspark 3.5 sends a token over TLS only: in plaintext on loopback its key goes as `;x-api-key=` metadata.
    const credential = Number(version.split('.')[0]) >= 4 ? `;token=${keys.alice}` : `;x-api-key=${keys.alice}`;
    const session = randomUUID();
    const seen = await runConnectClientOf(version, 'artifact', `sc://localhost:${port}/${credential};template=${template};session_id=${session}`, '300');
    t.equal(seen.version, version, `a Spark ${version} server`);
    t.equal(seen.added, true, `${version}: the artifact was added (${seen.status ?? ''} ${seen.message ?? ''})`);
    t.equal(seen.count, 10, `${version}: the session still answers`);
    const app = ((await alice('GET', '/api/apps/')).json.items as App[]).find((x) => x.labels?.['connect.submission-service.io/session'] === session);
    t.ok(app, `${version}: the session's application`);
    await alice('POST', `/api/apps/${app!.appName}/stop`);
    await until(async () => (await alice('GET', `/api/apps/${app!.appName}`)).json.state !== 'RUNNING', { what: `${version}'s server to stop`, timeoutMs: 120_000, intervalMs: 500 });
  }
});
