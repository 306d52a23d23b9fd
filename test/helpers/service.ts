// The real command line: `submission-service local` as a child process (the compiled
// dist/, so run `npx tsc -p .` first), and one-shot commands such as `apps list`.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cacheDir } from '../../lib/cache-dir.js';
import { join } from 'node:path';
import { exampleClusterFile, repoRoot } from './api.js';
import { killDrivers } from './drivers.js';
import { unmountWorkDirs } from '../../cluster/local/work-dir-space.js';
import { testbedArgs } from '../../testbed/entry.js';

export const binPath = join(repoRoot, 'bin', 'submission-service.js');

interface TestLike { teardown(fn: () => unknown): void }

/**
 * The environment with the project's Spark virtualenv (what `source env.sh` would set),
 * read from the setup's env file when the caller has not sourced one.
 */
/**
 * scripts/setup.sh's env file: it names each by its contents (env-<hash>.sh; env.sh before), so
 * the fullest (the test command's, with the tools), then the newest.
 */
function setupEnvFile(): string | undefined {
  const dir = cacheDir();
  let names: string[];
  try { names = readdirSync(dir).filter((name) => /^env(-[0-9a-f]+)?\.sh$/.test(name)); } catch { return undefined; }
  const files = names.map((name) => {
    const path = join(dir, name);
    return { path, lines: readFileSync(path, 'utf8').split('\n').length, mtime: statSync(path).mtimeMs };
  });
  files.sort((a, b) => b.lines - a.lines || b.mtime - a.mtime);
  return files[0]?.path;
}

export function sparkEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (env.SUBMISSION_SERVICE_PYTHON_ENV) return env;
  const file = setupEnvFile();
  if (!file) return env;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^export (\w+)='([^']*)'(:"\$PATH")?$/.exec(line.trim());
    if (m) env[m[1]] = m[3] ? `${m[2]}:${env.PATH ?? ''}` : m[2];
  }
  return env;
}

/** The real spark-submit and python of the virtualenv, for an in-process LocalCluster. */
export function realSpark(): { sparkSubmit: string; python?: string } | undefined {
  const venv = sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV;
  if (!venv || !existsSync(join(venv, 'bin', 'spark-submit'))) return undefined;
  return { sparkSubmit: join(venv, 'bin', 'spark-submit'), python: join(venv, 'bin', 'python') };
}

export interface Service {
  url: string;
  child: ChildProcess;
  /** Everything the service wrote so far (stdout and stderr). */
  output(): string;
  /** Sends the signal and resolves with the exit code (or signal name) once it is gone. */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface ServiceOptions {
  dataDir: string;
  env?: NodeJS.ProcessEnv;
  /** Extra flags, e.g. ['--auth', 'on', '--cores', '2']. */
  args?: string[];
  timeoutMs?: number;
  /** A command the service runs under, e.g. ['prlimit', '--nofile=256'] (it must exec the rest in place). */
  wrapper?: string[];
}

/** Starts `submission-service local` on a free port (port 0: the kernel picks) and waits for its URL. */
export async function startService(t: TestLike, options: ServiceOptions): Promise<Service> {
  if (!existsSync(join(repoRoot, 'dist', 'cli', 'main.js'))) throw new Error('dist/ is missing: run npx tsc -p . first');
  const [command, ...prefix] = [...(options.wrapper ?? []), process.execPath];
  const child = spawn(command!, [
    ...prefix, binPath, 'local', '--port', '0', '--data-dir', options.dataDir, '--node-pools', exampleClusterFile, ...(options.args ?? []),
  ], { env: { LOG_LEVEL: 'warn', ...(options.env ?? sparkEnv()) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const exited = new Promise<number | string>((ok) => child.once('exit', (code, signal) => ok(code ?? signal ?? -1)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    killDrivers(options.dataDir);
    unmountWorkDirs(join(options.dataDir, 'work')); // work dirs on a tmpfs (as root), else the data dir cannot be removed
  });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`the service did not start in time:\n${output}`)), options.timeoutMs ?? 300_000); // a safety net: the ready line decides
    const look = () => {
      const m = /at (http:\/\/[^\s/]+)\/api\//.exec(output);
      if (m) { clearTimeout(timer); ok(m[1]); }
    };
    child.stdout!.on('data', look);
    void exited.then((code) => { clearTimeout(timer); fail(new Error(`the service exited (${code}) before listening:\n${output}`)); });
  });
  return {
    url,
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface CliResult { code: number | null; stdout: string; stderr: string }

/** Runs one CLI command to its end. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 90_000): Promise<CliResult> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [binPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`${args.join(' ')} timed out:\n${stdout}\n${stderr}`)); }, timeoutMs);
    child.once('close', (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); }); // after the output is read
  });
}

/** JSON over HTTP against a running service. */
export async function http(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, json, text, headers: res.headers };
}

/**
 * `submission-service gateway` on a free port with `args` (e.g. --api-url), under `wrapper` when
 * given; resolves once it prints that it listens.
 */
export async function startGatewayAlone(t: TestLike, options: { args: string[]; port: number; env?: NodeJS.ProcessEnv; wrapper?: string[] }): Promise<Service> {
  const [command, ...prefix] = [...(options.wrapper ?? []), process.execPath];
  const child = spawn(command!, [...prefix, binPath, 'gateway', '--port', String(options.port), '--host', '127.0.0.1', ...options.args], {
    env: { LOG_LEVEL: 'warn', ...(options.env ?? process.env) }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => { output += c; });
  child.stderr.on('data', (c) => { output += c; });
  const exited = new Promise<number | string>((ok) => child.once('exit', (code, signal) => ok(code ?? signal ?? -1)));
  t.teardown(async () => { if (child.exitCode === null && child.signalCode === null) { child.kill('SIGKILL'); await exited; } });
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`the gateway did not start in time:\n${output}`)), 300_000);
    child.stdout.on('data', () => { if (output.includes('Notebook gateway at')) { clearTimeout(timer); ok(); } });
    void exited.then((code) => { clearTimeout(timer); fail(new Error(`the gateway exited (${code}) before listening:\n${output}`)); });
  });
  return {
    url: `http://127.0.0.1:${options.port}`, child, output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** `testbed <args>` (a real apiserver and the service's processes), resolving with what it printed. */
export function runTestbed(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, testbedArgs(args), { env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`testbed ${args.join(' ')} took over ${timeoutMs} ms: ${stderr}`)); }, timeoutMs);
    child.once('close', (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); }); // after the output is read
  });
}
