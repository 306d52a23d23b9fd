// scripts/setup.sh names its env file by what it holds: a plain setup (start-local.sh's) run
// while the test command's env file is in use writes a file of its own and leaves that one as it
// was (it used to rewrite a single env.sh without the tools line, and a running bench stopped
// with "SUBMISSION_SERVICE_TOOLS_ENV is missing"). Cheap: SKIP_BUILD=1, npm ci is skipped while
// the lock is unchanged, and the cache is the real one's virtualenvs linked into a temp dir.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

const realCache = process.env.SUBMISSION_SERVICE_CACHE ?? join(homedir(), '.cache', 'submission-service');
const cached = (prefix: string) => existsSync(realCache) && readdirSync(realCache).some((name) => name.startsWith(prefix) && existsSync(join(realCache, name, '.complete')));
const skip = cached('venv-') && cached('tools-') && cached('s3a-') ? false : 'needs the virtualenvs and S3A jars setup caches (scripts/test.sh makes them)';

function setup(cache: string, flags: Record<string, string>): string {
  const out = execFileSync('bash', [join(repoRoot, 'scripts', 'setup.sh')], {
    env: { ...process.env, SUBMISSION_SERVICE_CACHE: cache, SKIP_BUILD: '1', ...flags }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000,
  });
  return out.trim().split('\n').at(-1)!;
}

t.test('a plain setup leaves the test command\'s env file as it was; each flag set has its own file', { skip }, (t) => {
  const cache = tempDir(t, 'subsvc-setup-');
  for (const name of readdirSync(realCache)) {
    if (/^(venv|tools|s3a)-/.test(name)) symlinkSync(join(realCache, name), join(cache, name));
  }
  const testRun = setup(cache, { SETUP_TEST_TOOLS: '1' });
  const before = readFileSync(testRun, 'utf8');
  const mtime = statSync(testRun).mtimeMs;
  t.match(before, /^export SUBMISSION_SERVICE_TOOLS_ENV=/m, 'the test command\'s env file names the tools');

  const plain = setup(cache, {});
  t.not(plain, testRun, 'a plain setup prints another env file');
  t.notMatch(readFileSync(plain, 'utf8'), /SUBMISSION_SERVICE_TOOLS_ENV/, 'without the tools line');
  t.equal(readFileSync(testRun, 'utf8'), before, 'the test command\'s env file is unchanged');
  t.equal(statSync(testRun).mtimeMs, mtime, 'and not rewritten');

  t.equal(setup(cache, { SETUP_TEST_TOOLS: '1' }), testRun, 'the same flags give the same file again');
  t.same(readdirSync(cache).filter((name) => name.startsWith('env')).sort(), [plain, testRun].map((p) => p.slice(cache.length + 1)).sort(), 'no temp file left');
  t.end();
});
