// The Python client (clients/python) against the live service in local mode: its pytest suite
// runs in a virtualenv of its own (cached by hash, like scripts/setup.sh's), each pytest test
// reported here as a subtest. Also: its models are what generate_models.py makes from schemas/.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { run, runLiveSuite } from '../helpers/pytest.js';

const clientDir = join(repoRoot, 'clients', 'python');
const DEPENDENCIES = ['setuptools>=61', 'wheel', 'httpx>=0.24,<1', 'pytest>=7', 'pytest-asyncio>=0.21'];

/** A virtualenv with the client's dependencies, made once per pyproject.toml and Python version. */
async function clientVenv(): Promise<string> {
  const version = execFileSync('python3', ['--version'], { encoding: 'utf8' });
  const hash = createHash('sha256').update(readFileSync(join(clientDir, 'pyproject.toml'))).update(version).update(DEPENDENCIES.join('\n')).digest('hex').slice(0, 12);
  const cache = join(homedir(), '.cache', 'submission-service');
  const venv = join(cache, `pyclient-${hash}`);
  if (!existsSync(join(venv, '.complete'))) {
    // Built aside and renamed into place: a concurrent run never uses a half-made one (its bin/
    // scripts then name the old path: only `bin/python -m …` is used).
    const building = `${venv}.${process.pid}`;
    mkdirSync(cache, { recursive: true });
    rmSync(building, { recursive: true, force: true });
    const made = await run('python3', ['-m', 'venv', building]);
    if (made.code !== 0) throw new Error(`python3 -m venv failed:\n${made.output}`);
    const pip = await run(join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', ...DEPENDENCIES]);
    if (pip.code !== 0) throw new Error(`pip install failed:\n${pip.output}`);
    writeFileSync(join(building, '.complete'), '');
    if (!existsSync(join(venv, '.complete'))) {
      rmSync(venv, { recursive: true, force: true });
      renameSync(building, venv);
    } else rmSync(building, { recursive: true, force: true });
  }
  return venv;
}

t.test('the client\'s models are what generate_models.py makes from schemas/ today', async (t) => {
  const check = await run('python3', [join(clientDir, 'generate_models.py'), '--check']);
  t.equal(check.code, 0, `clients/python/src/submission_service/models.py is up to date (run python3 clients/python/generate_models.py)\n${check.output}`);
});

t.test('the client\'s pytest suite passes against the live service', async (t) => {
  const venv = await clientVenv();
  await runLiveSuite(t, { python: join(venv, 'bin', 'python'), dir: clientDir, install: [clientDir], minimumCases: 8 });
});
