// Where local mode keeps its data, which pools it sizes for, where Spark is.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, homedir, totalmem } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { cacheDir } from '../lib/cache-dir.js';
import { allSchemas, type NodePool, type NodePoolsFile } from '../schemas/index.js';

export const defaultDataDir = () =>
  process.env.SUBMISSION_SERVICE_DATA_DIR ?? join(process.env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'submission-service');

/** Reads and validates a node-pool file (the format of example-cluster.json). */
export function readNodePools(file: string): NodePoolsFile {
  return parseNodePools(readFileSync(file, 'utf8'), file);
}

/** A node-pool file's text, validated; `name` says which file in errors. */
export function parseNodePools(text: string, name: string): NodePoolsFile {
  const data = JSON.parse(text) as unknown;
  const ajv = new Ajv({ strict: false });
  for (const schema of allSchemas) ajv.addSchema(schema);
  const validate = ajv.getSchema('node-pools-file.json')!;
  if (!validate(data)) {
    const issue = validate.errors?.[0];
    throw new Error(`${name}: ${issue?.instancePath || '/'} ${issue?.message ?? 'is invalid'}`);
  }
  return data as NodePoolsFile;
}

/** Without a node-pool file, local mode's one pool is this machine. */
export function thisMachinePool(): NodePool {
  return {
    cloudProvider: 'local',
    instanceName: 'this-machine',
    cpu: availableParallelism(),
    memoryMib: Math.floor(totalmem() / 1024 / 1024),
    preemptible: false,
  };
}

/** The project's virtualenv: named by scripts/setup.sh's env, else the newest complete one in its cache. */
function pythonEnv(): string | undefined {
  const named = process.env.SUBMISSION_SERVICE_PYTHON_ENV;
  if (named) return named;
  const cache = cacheDir();
  if (!existsSync(cache)) return undefined;
  return readdirSync(cache)
    .filter((name) => name.startsWith('venv-') && existsSync(join(cache, name, '.complete')))
    .map((name) => join(cache, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

/** spark-submit from the project's virtualenv (scripts/setup.sh), else from PATH. */
export function findSpark(): { sparkSubmit: string; python?: string } {
  const venv = pythonEnv();
  if (venv && existsSync(join(venv, 'bin', 'spark-submit'))) {
    return { sparkSubmit: join(venv, 'bin', 'spark-submit'), python: join(venv, 'bin', 'python') };
  }
  return { sparkSubmit: 'spark-submit' };
}

/**
 * Spark needs Java 17+: say so plainly at start rather than in every driver's log. Asynchronous:
 * a JVM on a loaded machine can take seconds to print its version, and a blocked event loop
 * would have the overload guard answer the first requests 503.
 */
export async function javaProblem(): Promise<string | undefined> {
  const run = await new Promise<{ missing: boolean; stderr: string }>((resolve) => {
    execFile('java', ['-version'], { encoding: 'utf8' }, (error, _stdout, stderr) =>
      resolve({ missing: (error as NodeJS.ErrnoException | null)?.code === 'ENOENT', stderr }));
  });
  if (run.missing) return 'Java is not installed, so Spark drivers cannot run: apt-get install openjdk-17-jre-headless';
  const major = Number(/version "(\d+)/.exec(run.stderr)?.[1] ?? 0);
  return major >= 17 ? undefined : `Java ${major} found; Spark here needs 17 or later: apt-get install openjdk-17-jre-headless`;
}

/** `NAMESPACE/NAME` of a Secret (--secret, --keys-secret, --cert-secret); throws on anything else. */
export function parseSecretRef(ref: string, option = '--secret'): { namespace: string; name: string } {
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(ref);
  if (!match) throw new Error(`${option} takes NAMESPACE/NAME, not ${JSON.stringify(ref)}`);
  return { namespace: match[1]!, name: match[3]! };
}

/** A comma-separated flag (`--allowed-origins a,b`) as its entries, blanks dropped. */
export const listFlag = (value: string | undefined): string[] => (value ?? '').split(',').map((v) => v.trim()).filter(Boolean);
