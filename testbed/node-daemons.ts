// The real node's daemons as child processes: started through `testnode run` (so they die with
// this process), waited for by polling what they serve, stopped with a grace period.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `testnode ARGS` with its log in `logFile`; it gets SIGTERM if this process dies (PR_SET_PDEATHSIG). */
export function spawnDaemon(binDir: string, logFile: string, args: string[]): ChildProcess {
  const log = openSync(logFile, 'a');
  // containerd finds its shim, and the shim runc's sibling tools, on PATH.
  const child = spawn(join(binDir, 'testnode'), args, { stdio: ['ignore', log, log], env: { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}` } });
  closeSync(log);
  return child;
}

export const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** Polls `check` until it is true; fails when `child` exits first or after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, child: ChildProcess, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`${what}: exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    try { if (await check()) return; } catch (error) { last = error; }
    await new Promise((ok) => setTimeout(ok, 200));
  }
  throw new Error(`${what}: not ready within ${timeoutMs} ms (${(last as Error | undefined)?.message ?? 'no answer'})`);
}

export async function terminate(child: ChildProcess | undefined, graceMs: number): Promise<void> {
  if (!child || exited(child)) return;
  const gone = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

/** Resolves once the containerd `child` serves `socket` (its `ctr version` answers); `log`: its log file, named when it does not. */
export function containerdAnswers(binDir: string, socket: string, child: ChildProcess, log: string): Promise<void> {
  return waitFor(async () => { await run(join(binDir, 'ctr'), ['--address', socket, 'version']); return true; }, child, 60_000, `containerd (${log})`);
}
