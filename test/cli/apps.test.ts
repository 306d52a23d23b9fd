// The command line against the real service process: `keys create`, then `local --auth on`,
// then `apps submit --follow`, `apps list`, `apps logs`. The service's spark-submit is the
// TEST DOUBLE of test/helpers/fake-spark-submit.ts (a fake virtualenv), so no JVM starts.
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { http, runCli, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

t.test('keys, auth on, and apps submit|list|logs from a terminal', async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const { SUBMISSION_SERVICE_URL: _url, SUBMISSION_SERVICE_API_KEY: _key, ...inherited } = process.env;
  const env: NodeJS.ProcessEnv = { ...inherited, SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) };

  const created = await runCli(['keys', 'create', '--role', 'user', '--label', 'cli test', '--data-dir', dataDir], env);
  t.equal(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  t.match(key, /^\S{20,}$/, 'the key alone on stdout');
  const admin = new FileKeyStore(dataDir).create('admin', 'cli test admin').key; // the CLI path is covered just above

  const service = await startService(t, { dataDir, env, args: ['--auth', 'on', '--cores', '2'] });
  const url = service.url;
  const withKey = { ...env, SUBMISSION_SERVICE_URL: url, SUBMISSION_SERVICE_API_KEY: key };

  await t.test('authentication: 401 without a key or with a wrong one, 201 with the key', async (t) => {
    const body = { jobName: 'authcheck', configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py' } };
    const none = await http(url, 'POST', '/api/apps/', body);
    t.equal(none.status, 401);
    t.type(none.json?.message, 'string');
    t.equal((await http(url, 'GET', '/api/apps/')).status, 401, 'listing needs a key too');
    t.equal((await http(url, 'POST', '/api/apps/', body, { 'x-api-key': `${key}x` })).status, 401, 'a wrong key is refused');
    const ok = await http(url, 'POST', '/api/apps/', body, { 'x-api-key': key });
    t.equal(ok.status, 201, ok.text.slice(0, 200));
    t.equal((await http(url, 'GET', `/api/apps/${ok.json.appName}`, undefined, { authorization: `Bearer ${key}` })).status, 200, 'Bearer works too');
    const tpl = { name: 'only-admins', config: {} };
    t.equal((await http(url, 'POST', '/api/config-templates/', tpl, { 'x-api-key': key })).status, 403, 'a user key may not write templates');
    t.equal((await http(url, 'POST', '/api/config-templates/', tpl, { 'x-api-key': admin })).status, 201, 'an admin key may');
    t.equal((await http(url, 'GET', '/api/')).status, 200, 'the API reference needs no key');
    const noKey = await runCli(['apps', 'list', '--url', url], env);
    t.not(noKey.code, 0, 'the CLI without a key fails');
    t.match(noKey.stderr, /401/, 'and says why');
  });

  let completed = '';
  let failed = '';
  await t.test('apps submit --follow: state transitions, the log, exit 0 for COMPLETED', async (t) => {
    const res = await runCli(['apps', 'submit', '--job', 'clijob',
      '--set', 'type=Python', '--set', 'mainApplicationFile=local:///fake/job.py',
      '--set', 'arguments=["lines=4","tick=0.4","sleep=1"]', '--set', 'engineConf.spark.test.marker=cli', '--follow'], withKey);
    t.equal(res.code, 0, `exit code 0 (stderr: ${res.stderr})`);
    const name = /submitted (\S+)/.exec(res.stderr)?.[1] ?? '';
    t.match(name, /^clijob-\d{8}-\d{6}-[a-z0-9]{5}$/, 'says what it submitted');
    completed = name;
    const states = [...res.stderr.matchAll(new RegExp(`${name} ([A-Z]+)`, 'g'))].map((m) => m[1]);
    t.ok(states.length >= 2, `prints transitions (${states.join(' -> ')})`);
    t.equal(states.at(-1), 'COMPLETED', 'ends on COMPLETED');
    t.ok(states.slice(0, -1).every((s) => s === 'PENDING' || s === 'RUNNING'), 'passes through PENDING/RUNNING first');
    t.same(states, [...new Set(states)], 'each state printed once');
    t.match(res.stdout, /fake line 1 of 4\nfake line 2 of 4\nfake line 3 of 4\nfake line 4 of 4\n/, 'the log streamed to stdout');
    t.match(res.stdout, /exits with 0\n/, 'to its end');
    const app = await http(url, 'GET', `/api/apps/${name}`, undefined, { 'x-api-key': key });
    t.equal(app.json.state, 'COMPLETED');
    t.equal(app.json.config.engineConf['spark.test.marker'], 'cli', '--set engineConf.<dotted key> stays one key');
    t.same(app.json.config.arguments, ['lines=4', 'tick=0.4', 'sleep=1'], '--set with a JSON value');
  });

  await t.test('apps submit --follow of an app that fails exits non-zero', async (t) => {
    const res = await runCli(['apps', 'submit', '--job', 'clifail', '--set', 'type=Python',
      '--set', 'mainApplicationFile=local:///fake/job.py', '--set', 'arguments=["exit=3","lines=2"]', '--follow'], withKey);
    t.not(res.code, 0, `non-zero exit (${res.code})`);
    failed = /submitted (\S+)/.exec(res.stderr)?.[1] ?? '';
    t.match(res.stderr, new RegExp(`${failed} FAILED \\(exit code 3\\)`), 'prints FAILED with the exit code');
    t.match(res.stdout, /fake line 2 of 2\n/, 'the log streamed');
  });

  await t.test('apps submit refused by the service: non-zero exit, the reason on stderr', async (t) => {
    const [res, typo] = await Promise.all([
      runCli(['apps', 'submit', '--job', 'toobig', '--set', 'executor.cores=9'], withKey),
      runCli(['apps', 'submit', '--job', 'typo', '--set', 'exectuor.cores=2'], withKey),
    ]);
    t.not(res.code, 0);
    t.match(res.stderr, /422/);
    t.match(res.stderr, /availableNodePools/, 'the 422 body is shown');
    t.not(typo.code, 0);
    t.match(typo.stderr, /400.*exectuor/, 'an unknown field is named');
  });

  await t.test('apps list and apps logs', async (t) => {
    // Independent reads, run at once (each CLI start loads the whole package).
    const [list, byJob, byState, bySearch, logs, missing] = await Promise.all([
      runCli(['apps', 'list'], withKey),
      runCli(['apps', 'list', '--job', 'clijob'], withKey),
      runCli(['apps', 'list', '--state', 'FAILED'], withKey),
      runCli(['apps', 'list', '--search', failed.slice(-5).toUpperCase()], withKey),
      runCli(['apps', 'logs', completed], withKey),
      runCli(['apps', 'logs', 'no-such-app-20200101-000000-aaaaa'], withKey),
    ]);
    t.equal(list.code, 0, list.stderr);
    const lines = list.stdout.trim().split('\n');
    const names = lines.map((l) => l.split(/\s+/)[0]);
    t.ok(names.includes(completed) && names.includes(failed), 'lists both apps');
    t.match(lines.find((l) => l.startsWith(completed)), /\sCOMPLETED\s/);
    t.match(lines.find((l) => l.startsWith(failed)), /\sFAILED\s/);
    t.equal(names.indexOf(failed) < names.indexOf(completed), true, 'newest first');

    t.same(byJob.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]), [completed], '--job filters');
    t.same(byState.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]), [failed], '--state filters');
    t.same(bySearch.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0]), [failed], '--search asks the server (q), ignoring case');

    t.equal(logs.code, 0);
    const direct = await http(url, 'GET', `/api/apps/${completed}/log`, undefined, { 'x-api-key': key });
    t.equal(logs.stdout, direct.text, 'apps logs prints the whole log');
    t.not(missing.code, 0);
    t.match(missing.stderr, /404/);
  });

  t.equal(await service.stop('SIGTERM'), 0, 'the service stops cleanly on SIGTERM');
});
