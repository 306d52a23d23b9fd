// Driver processes on this machine. Each runs in its own process group (so stop ends
// the whole tree: spark-submit, the JVM, Python workers) under a tiny shell wrapper
// that writes the exit code to a file; the service can die and find it again.
import { spawn } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../../lib/package-root.js';
import type { V1Pod } from '@kubernetes/client-node';
import type { LocalCommand } from './local-command.js';
import { driverEnvironment, moveLauncherToken, sandboxedCommand } from './sandbox.js';
import { prepareEventLogDir } from './sandbox-event-log.js';
import { prepareTempDir } from './driver-temp.js';
import { type LocalMachine, localDriverCommand } from './spark-command.js';

export interface Started {
  pid: number;
  startTicks: number;
  /** Resolves when the process ends (only for processes this service started). */
  exited: Promise<void>;
}

/** State letter, process group and start time (clock ticks after boot) from /proc/PID/stat. */
function readStat(pid: number | string): { state: string; group: number; startTicks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // the name may hold spaces
    return { state: fields[0], group: Number(fields[2]), startTicks: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

export const processStartTicks = (pid: number): number | undefined => readStat(pid)?.startTicks;

/** Whether the process we started still runs (and is that process, not a reused pid). */
export function isAlive(pid: number, startTicks: number): boolean {
  const stat = readStat(pid);
  return stat !== undefined && stat.startTicks === startTicks && stat.state !== 'Z';
}

/**
 * Whether a live process of the group is left. Zombies do not count: a JVM's exited child
 * waits in the group until init reaps it, and `kill(-pgid, 0)` would count it.
 */
function groupAlive(pgid: number): boolean {
  return readdirSync('/proc').some((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    const stat = readStat(entry); // undefined when it ended meanwhile
    return stat !== undefined && stat.group === pgid && stat.state !== 'Z';
  });
}

// The wrapper does not depend on the driver's environment: absolute paths only (a driver's PATH
// must not break how its end is recorded), builtins otherwise, and files only its owner reads.
// The exit code is written in place into the file the service made before the start (its space
// is taken then: a full disk cannot refuse it). With a log cap, the driver's output goes through
// the capper (log-capper.ts), which writes the log file; it runs as the service, outside any
// sandbox, so with an empty environment: none of the pod's variables (NODE_OPTIONS) reaches it.
const WRAPPER = 'umask 077; "$@"; code=$?; printf "%s" "$code" 1<>"$EXIT_FILE"; exit "$code"';
const CAPPED_WRAPPER = 'umask 077; node=$1; capper=$2; cap=$3; shift 3; { "$@"; code=$?; printf "%s" "$code" 1<>"$EXIT_FILE"; } 2>&1 | /usr/bin/env -i "$node" "$capper" "$cap" "$EXIT_FILE"';

/** The capper script, beside this module once compiled (from source, the compiled one). */
function capperScript(): string {
  const beside = fileURLToPath(new URL('./log-capper.js', import.meta.url));
  return existsSync(beside) ? beside : join(packageRoot, 'dist', 'cluster', 'local', 'log-capper.js');
}

/** `logCap`: the most bytes the log file takes (log-cap.ts); undefined: the driver writes it directly. */
export function startProcess(command: LocalCommand, logFile: string, exitFile: string, logCap?: number): Started {
  const log = openSync(logFile, 'a', 0o600);
  const wrapper = logCap === undefined ? [WRAPPER, 'driver'] : [CAPPED_WRAPPER, 'driver', process.execPath, capperScript(), String(logCap)];
  try {
    const child = spawn('/bin/sh', ['-c', ...wrapper, command.command, ...command.args], {
      detached: true, // its own process group, and it outlives the service
      stdio: ['ignore', log, log],
      // The pod's env on top of the allowlisted part of the service's (sandbox.ts); the wrapper's
      // own variable last, so no pod sets it.
      env: { ...driverEnvironment(process.env), ...command.env, EXIT_FILE: exitFile },
    });
    if (child.pid === undefined) throw new Error(`could not start ${command.command}`);
    child.unref();
    const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
    return { pid: child.pid, startTicks: processStartTicks(child.pid) ?? 0, exited };
  } finally {
    closeSync(log);
  }
}

/** Runs an admitted driver pod on this machine: local mode's drivers and FakeKubelet's alike. */
export function startDriverPod(pod: V1Pod, machine: LocalMachine, cores: number, files: { logFile: string; exitFile: string; logCap?: number }): Started {
  mkdirSync(machine.workDir, { recursive: true, mode: 0o700 });
  const command = localDriverCommand(pod, machine, cores);
  const { sandbox } = machine;
  if (!sandbox) return startProcess(command, files.logFile, files.exitFile, files.logCap);
  // The work dir is the driver user's; the log and exit files stay the service's (the driver
  // writes its log through the descriptor it is given, the wrapper outside writes the exit code).
  if (sandbox.user) chownSync(machine.workDir, sandbox.user.uid, sandbox.user.gid);
  prepareEventLogDir(sandbox, machine.workDir);
  prepareTempDir(sandbox, machine.workDir);
  return startProcess(sandboxedCommand(moveLauncherToken(command, sandbox, machine.workDir), sandbox, machine.workDir), files.logFile, files.exitFile, files.logCap);
}

/** The exit code the wrapper recorded, if the process ended by itself. */
export function readExitCode(exitFile: string): number | undefined {
  if (!existsSync(exitFile)) return undefined;
  const code = Number.parseInt(readFileSync(exitFile, 'utf8'), 10);
  return Number.isNaN(code) ? undefined : code;
}

/**
 * Whether a file name in `runDir` is an `EXIT_FILE.tmp` that no live driver is writing: a wrapper
 * killed between writing its code and the rename leaves one behind.
 */
export const staleExitTemp = (runDir: string, liveExitFiles: ReadonlySet<string>) => (name: string): boolean =>
  name.endsWith('.exit.tmp') && !liveExitFiles.has(join(runDir, name.slice(0, -'.tmp'.length)));

/** Ends the whole process group: TERM, then KILL after a grace period. */
export async function killGroup(pid: number, startTicks: number, graceMs = 5000): Promise<void> {
  if (!isAlive(pid, startTicks) && !groupAlive(pid)) return;
  const signal = (sig: NodeJS.Signals) => {
    try { process.kill(-pid, sig); } catch { /* already gone */ }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!groupAlive(pid)) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  signal('SIGKILL');
}
