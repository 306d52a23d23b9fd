// scripts/setup.sh names its env file by what it holds: a plain setup (start-local.sh's) run
// while the test command's env file is in use writes a file of its own and leaves that one as it
// was (it used to rewrite a single env.sh without the tools line, and a running bench stopped
// with "SUBMISSION_SERVICE_TOOLS_ENV is missing"). Cheap: SKIP_BUILD=1, npm ci is skipped while
// the lock is unchanged, and the cache is the real one's virtualenvs and jars linked into a temp
// dir: every one that these flags make (CACHED), so that no pip install runs. The two Connect
// clients' venvs were once left out, and each run of this file built both again (45 s of pip's CPU).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

const realCache = process.env.SUBMISSION_SERVICE_CACHE ?? join(homedir(), '.cache', 'submission-service');
/** What setup.sh with SETUP_TEST_TOOLS=1 keeps in its cache: the venvs, the S3A jars, Connect's server jar and its two clients' venvs. */
const CACHED = /^(venv|tools|s3a|connect|connect-client|connect-client-4\.2)-[0-9a-f]{12}$/;
const cached = (kind: string) => existsSync(realCache) && readdirSync(realCache).some((name) => CACHED.exec(name)?.[1] === kind && existsSync(join(realCache, name, '.complete')));
const skip = ['venv', 'tools', 's3a', 'connect-client', 'connect-client-4.2'].every(cached) ? false : 'needs the virtualenvs, S3A jars and Connect clients setup caches (scripts/test.sh makes them)';

/** Runs setup.sh on `cache`: the env file it printed, and whether it made a virtualenv (false: the cache served every one). */
function setup(cache: string, flags: Record<string, string>): { file: string; made: boolean } {
  const run = spawnSync('bash', [join(repoRoot, 'scripts', 'setup.sh')], {
    env: { ...process.env, SUBMISSION_SERVICE_CACHE: cache, SKIP_BUILD: '1', ...flags }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000,
  });
  if (run.status !== 0) throw new Error(`setup.sh exited ${run.status ?? run.signal}: ${run.stderr}`);
  return { file: run.stdout.trim().split('\n').at(-1)!, made: /creating Python virtualenv/.test(run.stderr) };
}

t.test('a plain setup leaves the test command\'s env file as it was; each flag set has its own file', { skip }, (t) => {
  const cache = tempDir(t, 'subsvc-setup-');
  for (const name of readdirSync(realCache)) {
    if (CACHED.test(name)) symlinkSync(join(realCache, name), join(cache, name));
  }
  const first = setup(cache, { SETUP_TEST_TOOLS: '1' });
  // Made only where the real cache lacks a venv of these requirements (a stale cache); in the suite, none.
  if (first.made) t.comment('the first setup made a virtualenv the real cache lacked');
  const testRun = first.file;
  const before = readFileSync(testRun, 'utf8');
  const mtime = statSync(testRun).mtimeMs;
  t.match(before, /^export SUBMISSION_SERVICE_TOOLS_ENV=/m, 'the test command\'s env file names the tools');

  const plainRun = setup(cache, {});
  const plain = plainRun.file;
  t.notOk(plainRun.made, 'a plain setup makes no virtualenv: the cache has it');
  t.not(plain, testRun, 'a plain setup prints another env file');
  t.notMatch(readFileSync(plain, 'utf8'), /SUBMISSION_SERVICE_TOOLS_ENV/, 'without the tools line');
  t.equal(readFileSync(testRun, 'utf8'), before, 'the test command\'s env file is unchanged');
  t.equal(statSync(testRun).mtimeMs, mtime, 'and not rewritten');

  const again = setup(cache, { SETUP_TEST_TOOLS: '1' });
  t.equal(again.file, testRun, 'the same flags give the same file again');
  t.notOk(again.made, 'and make no virtualenv again');
  t.same(readdirSync(cache).filter((name) => name.startsWith('env')).sort(), [plain, testRun].map((p) => p.slice(cache.length + 1)).sort(), 'no temp file left');
  t.end();
});
