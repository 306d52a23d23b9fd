// Local mode's Spark per engineVersion: each offered version runs from a Python virtualenv of
// its own (pyspark carries Spark: spark-submit, spark-class, the jars), made from the
// requirements file that pins that pyspark (requirements.txt: the version setup always makes;
// requirements-spark-X.Y.txt: the others), at the first application that needs it, by
// python-env.sh beside this file. That script is the one scripts/setup.sh uses, so both name a venv by
// the same hash and find each other's, and it takes a lock: two processes never build one venv
// at once (the second waits, then finds it made).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../../lib/cache-dir.js';
import { packageRoot } from '../../lib/package-root.js';
import { engineMinor } from '../../domain/engine-versions.js';

/** The Spark one application runs: its spark-submit and the Python whose pyspark it is. */
export interface SparkInstall {
  version: string;
  sparkSubmit: string;
  python?: string;
  /** The virtualenv (a sandboxed driver must be able to read it); undefined: spark-submit from PATH. */
  dir?: string;
}

/** A requirements file of the package: its name and its text. */
export interface RequirementsFile { name: string; text: string }

/** The requirements file that pins `pyspark==version`, if any (pure). */
export function requirementsFor(version: string, files: readonly RequirementsFile[]): RequirementsFile | undefined {
  // A pin may carry an environment marker (`; python_version ...`) and a comment.
  const pin = new RegExp(`^\\s*pyspark==${version.replaceAll('.', '\\.')}\\s*(;[^#\\n]*)?(#.*)?$`, 'm');
  return files.find((file) => pin.test(file.text));
}

/** The venv's name prefix, as setup names it: `venv` for requirements.txt, `spark-X.Y` for a version's own file. */
export const venvName = (file: string, version: string): string => (file === 'requirements.txt' ? 'venv' : `spark-${engineMinor(version)}`);

/** The venv's folder: NAME-HASH, the hash over the file's text and `python3 --version`'s line, as python-env.sh computes it. */
export function venvDir(cache: string, name: string, requirementsText: string, pythonVersionLine: string): string {
  const hash = createHash('sha256').update(requirementsText).update(pythonVersionLine).digest('hex').slice(0, 12);
  return join(cache, `${name}-${hash}`);
}

const installIn = (version: string, dir: string): SparkInstall =>
  ({ version, sparkSubmit: join(dir, 'bin', 'spark-submit'), python: join(dir, 'bin', 'python'), dir });

export interface SparkEnvsOptions {
  /** What setup made (findSpark): it serves the version requirements.txt pins, as before. */
  base: { sparkSubmit: string; python?: string };
  /** Where the requirements files and cluster/local/python-env.sh are (default: the package's root). */
  root?: string;
  /** Where venvs are kept (default: the service's cache). */
  cache?: string;
}

/** Spark installs by version: ready ones at once, others made on first need (once per process, locked across processes). */
export class SparkEnvs {
  private readonly root: string;
  private readonly cache: string;
  private readonly files: RequirementsFile[];
  private readonly building = new Map<string, Promise<SparkInstall>>();
  private pythonLine: Promise<string> | undefined;

  constructor(private readonly options: SparkEnvsOptions) {
    this.root = options.root ?? packageRoot;
    this.cache = options.cache ?? cacheDir();
    this.files = readdirSync(this.root)
      .filter((name) => /^requirements(-spark-[0-9.]+)?\.txt$/.test(name))
      .map((name) => ({ name, text: readFileSync(join(this.root, name), 'utf8') }));
  }

  /** The install for `version` if it can run now without building anything; undefined: `prepare` builds it. */
  async ready(version: string): Promise<SparkInstall | undefined> {
    const file = requirementsFor(version, this.files);
    if (!file) return undefined; // prepare says why
    if (file.name === 'requirements.txt') return { version, ...this.options.base, ...this.baseDir() };
    const dir = venvDir(this.cache, venvName(file.name, version), file.text, await this.pythonVersionLine());
    return existsSync(join(dir, '.complete')) ? installIn(version, dir) : undefined;
  }

  /** The install for `version`, building its venv first when needed (minutes: pip downloads pyspark). */
  async prepare(version: string): Promise<SparkInstall> {
    const now = await this.ready(version);
    if (now) return now;
    let pending = this.building.get(version);
    if (!pending) {
      pending = this.build(version).finally(() => this.building.delete(version));
      this.building.set(version, pending);
    }
    return pending;
  }

  /** Every version among `versions` that is ready now, newest first (the History Server runs the newest). */
  async preparedNewestFirst(versions: readonly string[]): Promise<SparkInstall[]> {
    const found = await Promise.all(versions.map((version) => this.ready(version)));
    const byVersion = (a: SparkInstall, b: SparkInstall) => compareVersions(b.version, a.version);
    return found.filter((install): install is SparkInstall => install !== undefined).sort(byVersion);
  }

  private baseDir(): { dir?: string } {
    const { python } = this.options.base;
    return python && python.endsWith('/bin/python') ? { dir: python.slice(0, -'/bin/python'.length) } : {};
  }

  private async build(version: string): Promise<SparkInstall> {
    const file = requirementsFor(version, this.files);
    if (!file) throw new Error(`no requirements file pins pyspark==${version}`);
    const script = join(this.root, 'cluster', 'local', 'python-env.sh');
    const out = await run('bash', [script, join(this.root, file.name), venvName(file.name, version)], { ...process.env, SUBMISSION_SERVICE_CACHE: this.cache });
    const dir = out.trim().split('\n').pop() ?? '';
    if (!existsSync(join(dir, '.complete'))) throw new Error(`the virtualenv for Spark ${version} was not made (${dir})`);
    return installIn(version, dir);
  }

  private pythonVersionLine(): Promise<string> {
    // python3 --version prints to stdout since 3.4; the shell hashes exactly that line.
    this.pythonLine ??= run('python3', ['--version'], process.env);
    this.pythonLine.catch(() => { this.pythonLine = undefined; });
    return this.pythonLine;
  }
}

/** Numeric order of dotted versions (4.2.0 > 3.5.7 > 3.5.10 is wrong as text). */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8', env, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${(stderr || error.message).trim().slice(-2000)}`));
      else resolve(stdout);
    });
  });
}
