// Drivers start from an allowlisted environment (cluster/local/sandbox.ts driverEnvironment):
// the real `submission-service local`, started with secret-looking variables of its own; a
// user's driver (Python's timeit.py as the main file, its `-s` code printing os.environ) sees
// none of them, and still has PATH, the locale and what the service sets for Spark. Before,
// drivers inherited the whole environment but three names. (Under tap the driver also shows
// NODE_OPTIONS and _TAPJS_* names: tap's process-info hook adds them to every child it spawns.)
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { driverEnvironment } from '../../cluster/local/sandbox.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { join } from 'node:path';

const spark = realSpark();
const skip = !spark ? 'needs the Spark virtualenv' : false;

const PRINT_ENV = "import os\nfor name in sorted(os.environ): print('ENV', name, flush=True)";

t.test('a driver\'s Python sees none of the service\'s secret-looking variables', { skip, timeout: 240_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, admin: store.create('admin', 'platform').key };
  const env = { ...sparkEnv(), SOME_TOKEN: 'x-token-value', AWS_SECRET_ACCESS_KEY: 'x-aws', DATABASE_URL: 'postgres://u:p@db/x', LC_TIME: 'C.UTF-8' };
  const api = await startService(t, { dataDir, env, args: ['--auth', 'on', '--cores', '2'] });
  const timeit = execFileSync(spark!.python!, ['-c', 'import timeit; print(timeit.__file__)'], { encoding: 'utf8' }).trim();
  const created = await http(api.url, 'POST', '/api/apps/', {
    jobName: 'env', configOverrides: { type: 'Python', mainApplicationFile: `local://${timeit}`, arguments: ['-n', '1', '-r', '1', '-s', PRINT_ENV, 'pass'] },
  }, { 'x-api-key': keys.alice });
  t.equal(created.status, 201, 'submitted');
  const name = created.json.appName as string;
  await waitForState(async () => (await http(api.url, 'GET', `/api/apps/${name}`, undefined, { 'x-api-key': keys.admin })).json as { state: string }, 'COMPLETED', { timeoutMs: 180_000 });
  const log = (await http(api.url, 'GET', `/api/apps/${name}/log`, undefined, { 'x-api-key': keys.alice })).text;
  const names = new Set([...log.matchAll(/^ENV (\S+)$/gm)].map((m) => m[1]));
  t.ok(names.has('PATH'), `the driver printed its environment (${[...names].join(' ')})`);
  for (const secret of ['SOME_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'DATABASE_URL', 'SUBMISSION_SERVICE_PYTHON_ENV']) t.notOk(names.has(secret), `${secret} is not inherited`);
  t.ok(names.has('LC_TIME'), 'the locale is');
  t.ok(names.has('PYSPARK_PYTHON'), 'and what the service sets for Spark');
});

t.test('the allowlist: names and prefixes kept, everything else and the service\'s own secrets dropped', async (t) => {
  const kept = driverEnvironment({
    PATH: '/bin', HOME: '/h', LANG: 'C', LC_ALL: 'C', TZ: 'UTC', JAVA_HOME: '/j', SPARK_HOME: '/s', SPARK_LOCAL_IP: '127.0.0.1', PYSPARK_PYTHON: 'py',
    SOME_TOKEN: 'x', GITHUB_TOKEN: 'x', HTTPS_PROXY: 'http://u:p@proxy', SUBMISSION_SERVICE_API_KEY: 'k', SUBMISSION_SERVICE_GATEWAY_SECRET: 's', EXIT_FILE: 'f', NODE_OPTIONS: '--x',
  });
  t.same(Object.keys(kept).sort(), ['HOME', 'JAVA_HOME', 'LANG', 'LC_ALL', 'PATH', 'PYSPARK_PYTHON', 'SPARK_HOME', 'SPARK_LOCAL_IP', 'TZ']);
});
