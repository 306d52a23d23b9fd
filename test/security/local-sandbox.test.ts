// Local mode with `--auth on`: a `user` key never gets the service's rights through its own
// driver (issue #17). The real `submission-service local` with real pyspark, two user keys and
// an admin; each attack once reproduced on main: Python's timeit.py as the main file with code
// in `-s` read the secrets and minted an admin key; `-XX:OnOutOfMemoryError=<cmd>` ran a command
// as the service; `local://<data dir>/session-secret#.py` printed the secret. In the sandbox the
// reads fail and the key store is untouched; data-dir paths are refused at submission; without
// a sandbox the service refuses to serve user keys at all.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { repoRoot } from '../helpers/api.js';
import { waitForState } from '../helpers/poll.js';
import { groupAlive, storedApp } from '../helpers/drivers.js';
import { until } from '../helpers/poll.js';
import { http, realSpark, runCli, sparkEnv, startService } from '../helpers/service.js';

const spark = realSpark();
const skip = !spark ? 'needs the Spark virtualenv' : false;

/** A data dir outside /tmp (drivers get a /tmp of their own), so hiding it is what is tested. */
function dataDirOutsideTmp(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync('/var/tmp/subsvc-sandbox-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

async function service(t: Parameters<typeof dataDirOutsideTmp>[0], args: string[] = []) {
  const dataDir = dataDirOutsideTmp(t);
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, bob: store.create('user', 'bob').key, admin: store.create('admin', 'platform').key };
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2', ...args] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  return { api, dataDir, store, keys, as, alice: as(keys.alice), bob: as(keys.bob), admin: as(keys.admin) };
}

/** Python that tries what the attacker did: read the secrets and write an admin key into keys.json. */
const attack = (dataDir: string) => [
  'import hashlib, json, os',
  `d = ${JSON.stringify(dataDir)}`,
  "print('ATTACK RAN', os.getuid(), flush=True)",
  "for n in ('session-secret', 'gateway-secret', 'keys.json'):",
  '    try: print("READ", n, open(os.path.join(d, n)).read(), flush=True)',
  '    except Exception as e: print("DENIED", n, type(e).__name__, flush=True)',
  'try:',
  "    k = json.load(open(os.path.join(d, 'keys.json')))",
  "    k['keys'].append({'id': 'forged', 'role': 'admin', 'createdAt': '2026-01-01T00:00:00Z', 'hash': hashlib.sha256(b'ssk_forged').hexdigest()})",
  "    open(os.path.join(d, 'keys.json'), 'w').write(json.dumps(k))",
  "    print('MINTED', flush=True)",
  'except Exception as e: print("DENIED mint", type(e).__name__, flush=True)',
].join('\n');

const timeitFile = () => execFileSync(spark!.python!, ['-c', 'import timeit; print(timeit.__file__)'], { encoding: 'utf8' }).trim();

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any; text: string }>;

async function runToEnd(submit: Call, admin: Call, configOverrides: object): Promise<{ name: string; log: string; state: string }> {
  const created = await submit('POST', '/api/apps/', { jobName: 'attack', configOverrides });
  if (created.status !== 201) throw new Error(`submission refused: ${created.text}`);
  const name = created.json.appName as string;
  const ended = await waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 180_000 });
  return { name, log: (await submit('GET', `/api/apps/${name}/log`)).text, state: (ended as { state: string }).state };
}

t.test('timeit.py -s <code> as the main file: the driver reads no secret and mints no key', { skip, timeout: 240_000 }, async (t) => {
  const { dataDir, alice, admin, as } = await service(t);
  const secret = readFileSync(join(dataDir, 'session-secret')).toString('hex');
  const { log } = await runToEnd(alice, admin, { type: 'Python', mainApplicationFile: `local://${timeitFile()}`, arguments: ['-n', '1', '-r', '1', '-s', attack(dataDir), 'pass'] });
  t.match(log, /ATTACK RAN \d+/, 'the code did run');
  t.notMatch(log, /ATTACK RAN 0\b/, 'not as root');
  for (const file of ['session-secret', 'gateway-secret', 'keys.json']) t.match(log, new RegExp(`DENIED ${file} `), `${file} cannot be read`);
  t.match(log, /DENIED mint/);
  t.notMatch(log, /READ |MINTED/);
  t.notOk(log.includes(secret.slice(0, 16)), 'the session secret is not in the log');
  t.equal((await as('ssk_forged')('GET', '/api/apps/')).status, 401, 'the forged key is not accepted');
  t.notMatch(readFileSync(join(dataDir, 'keys.json'), 'utf8'), /forged/, 'keys.json is untouched');
});

t.test('-XX:OnOutOfMemoryError=<cmd> runs inside the sandbox: it reads no secret', { skip, timeout: 240_000 }, async (t) => {
  const { dataDir, bob, admin } = await service(t);
  const secret = readFileSync(join(dataDir, 'session-secret'));
  // The hook prints the secret (hex, so it can be found in the log); a 2 GiB array in a 512 MiB heap sets it off.
  const hook = `echo OOM-HOOK-RAN;od -An -tx1 ${join(dataDir, 'session-secret')};cp ${join(dataDir, 'keys.json')} /dev/stdout`;
  const oom = "from pyspark import SparkContext\nsc = SparkContext()\ntry: sc._jvm.java.nio.ByteBuffer.allocate(2**31 - 16)\nexcept Exception as e: print('JVM said', type(e).__name__)\nsc.stop()\n";
  const { log } = await runToEnd(bob, admin, {
    type: 'Python', mainApplicationFile: `local://${timeitFile()}`, arguments: ['-n', '1', '-r', '1', '-s', oom, 'pass'],
    engineConf: { 'spark.driver.memory': '512m', 'spark.driver.extraJavaOptions': `'-XX:OnOutOfMemoryError=${hook}'` },
  });
  t.match(log, /OOM-HOOK-RAN/, 'the hook ran');
  const firstBytes = [...secret.subarray(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
  t.notOk(log.includes(firstBytes), 'the session secret is not in the log');
  t.notMatch(log, /"hash"/, 'keys.json is not in the log');
});

t.test('a sandboxed driver is stopped by its owner only, and its whole process tree ends', { skip, timeout: 240_000 }, async (t) => {
  const { dataDir, alice, bob, admin } = await service(t);
  const created = await alice('POST', '/api/apps/', {
    jobName: 'sleeper', configOverrides: { type: 'Python', mainApplicationFile: `local://${timeitFile()}`, arguments: ['-n', '1', '-r', '1', '-s', 'import time; time.sleep(600)', 'pass'] },
  });
  t.equal(created.status, 201, created.text);
  const name = created.json.appName as string;
  await waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, 'RUNNING', { timeoutMs: 120_000 });
  // (the record on disk gets the driver's pid in the background, just after RUNNING is shown)
  await until(() => storedApp(dataDir, name)?.run !== undefined, { what: 'the run to be recorded' });
  const pid = storedApp(dataDir, name)!.run!.pid;
  t.equal((await bob('POST', `/api/apps/${name}/stop`)).status, 403, 'another user key may not stop it');
  t.ok(groupAlive(pid), 'still running after the refused stop');
  t.equal((await alice('POST', `/api/apps/${name}/stop`)).json?.state, 'KILLED');
  await until(() => !groupAlive(pid), { what: 'the sandbox and everything in it to end', timeoutMs: 30_000 });
  t.notOk(groupAlive(pid), 'bwrap, spark-submit, the JVM and Python are gone');
});

t.test('a main file or Spark file list inside the data dir is refused at submission', { skip, timeout: 120_000 }, async (t) => {
  const { dataDir, alice } = await service(t);
  const cases: [object, string][] = [
    [{ mainApplicationFile: `local://${dataDir}/session-secret#.py` }, 'mainApplicationFile'],
    [{ mainApplicationFile: `${dataDir}/../data/keys.json` }, 'mainApplicationFile'],
    [{ mainApplicationFile: 'local://$(SPARK_LOCAL_DIRS)/../../gateway-secret' }, 'mainApplicationFile'],
    [{ mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, engineConf: { 'spark.files': `local://${dataDir}/keys.json` } }, 'engineConf.spark.files'],
  ];
  for (const [overrides, field] of cases) {
    const res = await alice('POST', '/api/apps/', { jobName: 'peek', configOverrides: { type: 'Python', ...overrides } });
    t.equal(res.status, 400, JSON.stringify(overrides));
    t.match(res.json, { field, message: /inside the service's data dir/ });
  }
});

t.test('--auth on without a sandbox refuses to start while user keys exist, and serves admin keys only', { timeout: 120_000 }, async (t) => {
  const dataDir = dataDirOutsideTmp(t);
  const store = new FileKeyStore(dataDir);
  const admin = store.create('admin', 'platform').key;
  const user = store.create('user', 'alice');
  const refused = await runCli(['local', '--port', '0', '--data-dir', dataDir, '--auth', 'on', '--sandbox', 'off'], sparkEnv());
  t.not(refused.code, 0);
  t.match(refused.stderr, new RegExp(`user keys \\(${user.id}\\) needs a driver sandbox`));
  t.match(refused.stderr, /apt-get install bubblewrap/);
  store.revoke(user.id);
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--sandbox', 'off'] });
  t.equal((await http(api.url, 'GET', '/api/apps/', undefined, { 'x-api-key': admin })).status, 200, 'admin keys are served');
  const later = store.create('user', 'bob').key;
  t.equal((await http(api.url, 'GET', '/api/apps/', undefined, { 'x-api-key': later })).status, 401, 'a user key created while it runs is not');
});
