// This checkout's Python packages (the client, the Airflow provider) installed into a virtualenv,
// skipped when that virtualenv already holds exactly them: a `pip install --force-reinstall` of
// both costs ~4 CPU s and, on a loaded machine, most of a minute, and five test files and benches
// paid it one after another for the same files. What was installed is said by a stamp in the
// virtualenv that pairs each package's source hash with the hash of the RECORD pip wrote for it
// (the installed files' own hashes): any other install of the package (another checkout's, by
// hand) rewrites that RECORD, so the stamp no longer matches and the next run installs again.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run as runCommand } from './command.js';

// pip's and Python's few lines: a smaller cap than a pytest run's.
const run = (command: string, args: string[]) => runCommand(command, args, { maxBuffer: 16 * 1024 * 1024 });

/** What pip's build leaves beside the sources, and the packages' tests: not what is installed. */
const NOT_SOURCE = new Set(['build', 'tests', '__pycache__', '.pytest_cache']);

/** sha256 of a package folder's files (paths and contents), without build output and tests. */
export function sourceHash(dir: string): string {
  const hash = createHash('sha256');
  const walk = (sub: string): void => {
    for (const entry of readdirSync(join(dir, sub), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (NOT_SOURCE.has(entry.name) || entry.name.endsWith('.egg-info')) continue;
      const path = join(sub, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) hash.update(`${path}\0`).update(readFileSync(join(dir, path))).update('\0');
    }
  };
  walk('');
  return hash.digest('hex');
}

/** The distribution name pyproject.toml gives the package. */
const distName = (dir: string): string => {
  const name = /^name\s*=\s*"([^"]+)"/m.exec(readFileSync(join(dir, 'pyproject.toml'), 'utf8'))?.[1];
  if (!name) throw new Error(`no project name in ${dir}/pyproject.toml`);
  return name;
};

// Prints {name: sha256 of its RECORD, or null when it is not installed}; no Airflow import (~0.1 s).
const RECORDS = `import hashlib, importlib.metadata as m, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = hashlib.sha256((m.distribution(name).read_text("RECORD") or "").encode()).hexdigest()
    except m.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))`;

async function recordHashes(python: string, names: string[]): Promise<Record<string, string | null>> {
  const answer = await run(python, ['-c', RECORDS, ...names]);
  if (answer.code !== 0) throw new Error(`reading the installed packages' RECORDs failed:\n${answer.output}`);
  return JSON.parse(answer.output) as Record<string, string | null>;
}

type Stamp = Record<string, { source: string; record: string | null }>;

/**
 * Installs the package folders `dirs` into python's virtualenv as the READMEs say (pip, no
 * dependencies, no build isolation), unless the stamp shows these very sources installed.
 * Answers pip's exit code and output (0 and 'already installed' when skipped).
 */
export async function installCheckout(python: string, dirs: string[]): Promise<{ code: number; output: string }> {
  const stampFile = join(python, '..', '..', '.checkout-install.json');
  const names = dirs.map(distName);
  const sources = dirs.map(sourceHash);
  let stamp: Stamp = {};
  try { stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as Stamp; } catch { /* none yet: install */ }
  const records = await recordHashes(python, names);
  if (names.every((name, i) => records[name] && stamp[name]?.source === sources[i] && stamp[name]?.record === records[name])) {
    return { code: 0, output: `already installed: ${names.join(', ')}` };
  }
  // Without a build directory left from an earlier run, which setuptools would reuse.
  for (const dir of dirs) rmSync(join(dir, 'build'), { recursive: true, force: true });
  const install = await run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '--no-deps', '--no-build-isolation',
    '--force-reinstall', ...dirs]);
  if (install.code !== 0) return install;
  const installed = await recordHashes(python, names);
  const next: Stamp = { ...stamp };
  names.forEach((name, i) => { next[name] = { source: sources[i], record: installed[name] }; });
  // Written aside and renamed: a concurrent reader sees the old stamp or the new one, whole.
  writeFileSync(`${stampFile}.${process.pid}`, JSON.stringify(next));
  renameSync(`${stampFile}.${process.pid}`, stampFile);
  return install;
}
