// The Spark Connect endpoint with the real pyspark[connect] 3.5.7 client and real Spark Connect
// servers (one application per session): the work a user does, refusals as gRPC statuses with no
// side effect, two keys kept apart, and an idle session stopped; a token over the endpoint's own
// TLS. Heavy: two Spark drivers.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, runCli, sparkEnv, startService } from '../helpers/service.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';
import { connectClientPython, connectPortOf, createAdminKey, runConnectClient } from './connect-client.js';

const skip = !realSpark() || !connectClientPython() ? 'needs the Spark virtualenv and the Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;

t.test('Spark Connect sessions through the endpoint, as applications of their keys', { skip, timeout: 1_800_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const env = { ...sparkEnv(), LOG_LEVEL: 'warn' };
  const create = (label: string) => createAdminKey(t, dataDir, env, label);
  const [a, b, c] = [await create('A'), await create('B'), await create('C')];
  // Admin keys: local mode serves user keys only inside the driver sandbox, which is not what this covers.
  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--sandbox', 'off', '--cores', '2', '--connect-port', '0', '--connect-idle-timeout', '45s'] });
  const port = connectPortOf(service.output());
  t.ok(port, 'the endpoint says where it listens');
  // pyspark 3.5 sends a token over TLS only: in plaintext on loopback its key goes as `;x-api-key=` metadata.
  const url = (key: string | undefined, session: string) => `sc://localhost:${port}/${key ? `;x-api-key=${key}` : ''};session_id=${session}`;
  const apps = async () => (await http(service.url, 'GET', '/api/apps/', undefined, { 'x-api-key': a.key })).json.items as Array<{ appName: string; state: string; stateDetail?: string; labels?: Record<string, string>; submittedBy?: string }>;
  const [sessionA, sessionB] = [randomUUID(), randomUUID()];

  await t.test('no key, an unknown key, a revoked key: UNAUTHENTICATED, and nothing is started', async (t) => {
    const revoked = await runCli(['keys', 'revoke', c.id, '--data-dir', dataDir], env);
    t.equal(revoked.code, 0, revoked.stderr);
    const refused = [['no key', undefined], ['an unknown key', 'ssk_not-a-key'], ['a revoked key', c.key]] as const;
    // The three calls from one client process, a session of its own each: a process per call paid
    // the client's start (its imports) three times, most of what a refused call costs.
    const [first, ...rest] = refused.map(([, key]) => url(key, randomUUID()));
    const seen = (await runConnectClient('statuses', first!, ...rest)).statuses as Array<{ status: string; message?: string }>;
    t.equal(seen.length, refused.length, 'an answer for each call');
    refused.forEach(([what], i) => {
      t.equal(seen[i]?.status, 'UNAUTHENTICATED', `${what}: ${seen[i]?.message}`);
      t.match(seen[i]?.message, /API key/, `${what}: the message says what is wrong`);
    });
    t.same(await apps(), [], 'no application was submitted');
  });

  await t.test('a session runs a sum, a pandas round trip, a temp view, a Python UDF and an interrupt', async (t) => {
    const seen = await runConnectClient('work', url(a.key, sessionA));
    t.equal(seen.sum, 499999500000, 'spark.range(10**6) sums as in Spark');
    t.same(seen.pandas, { x: [1, 2, 3], y: ['a', 'b', 'c'] }, 'a pandas frame comes back as it went');
    t.equal(seen.view, 5, 'the temp view answers');
    t.same(seen.udf, [1, 2, 3], 'the Python UDF ran');
    t.ok(seen.interrupted.operations >= 1, 'interruptAll named the running query');
    t.ok(seen.interrupted.error, `the long query ended with an error (${seen.interrupted.error})`);
    const [app] = (await apps()).filter((x) => x.labels?.['connect.submission-service.io/session'] === sessionA);
    t.ok(app, 'the session is an application, labelled with its session id');
    t.equal(app?.submittedBy, a.id, 'submitted as the caller\'s key');
    t.equal(app?.state, 'RUNNING', 'and running');
  });

  await t.test('two keys see only their own views; another key\'s session id is PERMISSION_DENIED', async (t) => {
    const mine = await runConnectClient('views', url(a.key, sessionA), 'yours');
    t.same(mine.seen, ['mine'], 'A\'s next call reaches its own session (its view is there)');
    const theirs = await runConnectClient('views', url(b.key, sessionB), 'theirs');
    t.same(theirs.seen, [], 'B\'s session sees none of A\'s views');
    const before = await apps();
    const stolen = await runConnectClient('status', url(b.key, sessionA));
    t.equal(stolen.status, 'PERMISSION_DENIED', stolen.message);
    t.match(stolen.message, /another API key/);
    const after = await apps();
    t.same(after.map((x) => x.appName).sort(), before.map((x) => x.appName).sort(), 'nothing was started');
    // A's session may pass its idle timeout meanwhile on a loaded machine (B's server starting is a
    // JVM start): that stop says so in its stateDetail; the refused call stops nothing.
    const was = new Map(before.map((x) => [x.appName, x.state]));
    const stopped = after.filter((x) => x.state !== was.get(x.appName) && !/idle for more than/.test(x.stateDetail ?? ''));
    t.same(stopped.map((x) => [x.appName, x.state, x.stateDetail]), [], 'nothing was stopped by the refused call');
  });

  await t.test('a revoked key\'s session is stopped at once', async (t) => {
    const revoked = await runCli(['keys', 'revoke', b.id, '--data-dir', dataDir], env);
    t.equal(revoked.code, 0, revoked.stderr);
    await until(async () => (await apps()).some((x) => x.labels?.['connect.submission-service.io/session'] === sessionB && x.state === 'KILLED'), { what: 'B\'s session to be stopped', timeoutMs: 120_000, intervalMs: 500 });
    t.pass('B\'s session\'s application is KILLED');
    const after = await runConnectClient('status', url(b.key, sessionB));
    t.equal(after.status, 'UNAUTHENTICATED', after.message);
  });

  await t.test('an idle session is stopped, stays listed as ended, and its id is refused afterwards', async (t) => {
    await until(async () => (await apps()).some((x) => x.labels?.['connect.submission-service.io/session'] === sessionA && x.state === 'KILLED'), { what: 'A\'s idle session to be stopped', timeoutMs: 600_000, intervalMs: 1000 });
    t.pass('the idle session\'s application is KILLED (its record stays, with its Spark UI in the history)');
    const after = await runConnectClient('status', url(a.key, sessionA));
    t.equal(after.status, 'FAILED_PRECONDITION', after.message);
    t.match(after.message, /has ended/);
  });
});

t.test('over TLS with the certificate the service made, the 3.5 client\'s token is checked', { skip, timeout: 300_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const service = await startService(t, { dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--auth', 'on', '--sandbox', 'off', '--connect-port', '0', '--connect-tls', 'on'] });
  const trust = /GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=(\S+)\)/.exec(service.output())?.[1];
  t.equal(trust, join(dataDir, 'connect-tls', 'ca.pem'), 'the service says which certificate to trust');
  const seen = await runConnectClient('status', `sc://localhost:${connectPortOf(service.output())}/;token=ssk_not-a-key`, { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: trust! });
  t.equal(seen.status, 'UNAUTHENTICATED', seen.message);
  t.match(seen.message, /not valid/, 'the token arrived over TLS and was refused by the endpoint');
});
