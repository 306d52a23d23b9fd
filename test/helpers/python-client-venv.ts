// The Python client's virtualenv (its dependencies and pytest), made once per pyproject.toml and
// Python version and cached like scripts/setup.sh's: for the client's own suite
// (test/clients/python-client.test.ts) and for tests elsewhere that drive the service through it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../../lib/cache-dir.js';
import { repoRoot } from './api.js';
import { run } from './pytest.js';

export const pythonClientDir = join(repoRoot, 'clients', 'python');
const DEPENDENCIES = ['setuptools>=61', 'wheel', 'httpx>=0.24,<1', 'pytest>=7', 'pytest-asyncio>=0.21'];

/** The virtualenv's directory (its bin/python runs the client's code). */
export async function pythonClientVenv(): Promise<string> {
  const version = execFileSync('python3', ['--version'], { encoding: 'utf8' });
  const hash = createHash('sha256').update(readFileSync(join(pythonClientDir, 'pyproject.toml'))).update(version).update(DEPENDENCIES.join('\n')).digest('hex').slice(0, 12);
  const cache = cacheDir();
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
