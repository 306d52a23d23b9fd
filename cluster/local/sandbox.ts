// Local drivers run user code: with more than one person's keys, none of it may run with the
// service's rights. Each driver starts inside bubblewrap (Debian's `bwrap`): the whole machine
// read-only, the data dir (keys.json, session-secret, gateway-secret, records, every other
// application's log and work dir) and the service user's home replaced by empty tmpfs, a /tmp
// of its own, its own PID namespace (no /proc of the service or of other drivers), an
// environment of allowlisted names only (driverEnvironment), its work dir the one place it may write.
// A service running as root also drops the driver to an unprivileged user (setpriv); one that
// is not root keeps its uid inside a user namespace, and the mounts alone hide the files.
import { spawnSync } from 'node:child_process';
import { accessSync, chownSync, constants, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { LAUNCHER_TOKEN_FILE_ENV } from '../../domain/index.js';
import type { LocalCommand } from './local-command.js';

export interface DriverSandbox {
  bwrap: string;
  /** When the service is root: the user drivers run as (through setpriv). */
  user?: { uid: number; gid: number; setpriv: string };
  /** Paths no driver sees (each becomes an empty tmpfs), the data dir last. */
  hidden: string[];
  /** Paths below hidden ones that drivers need, read-only (the Spark virtualenv, the service's own files). */
  readable: string[];
  /** The data dir: hidden after `readable`, so that no readable path shows it again. */
  dataDir: string;
  /**
   * The service's event log directory (in the data dir, so hidden): drivers write their event
   * logs into their own work dir instead, and the service moves them there once they ended
   * (sandbox-event-log.ts). Undefined: no history.
   */
  eventLogDir?: string;
}

/**
 * Where a driver finds its work dir inside the sandbox. Not its real path: the directories above
 * the data dir may be closed to the driver's user (0700), and this one is in the driver's own /tmp.
 */
export const SANDBOX_WORK_DIR = '/tmp/app';

/** Variables of the service that no driver may inherit (keys and secrets given through the environment). */
export const SERVICE_SECRETS = ['SUBMISSION_SERVICE_API_KEY', 'SUBMISSION_SERVICE_GATEWAY_SECRET', 'EXIT_FILE'];

/**
 * The service's variables a driver inherits, sandboxed or not: where programs and Java are, the
 * user, locale and time zone, a temp dir, and Spark's, PySpark's and Hadoop's own settings. Any
 * other (a cloud credential, a token, a proxy URL with a password) stays the service's; what the
 * pod's env says is added on top (process-runner.ts).
 */
export const DRIVER_ENV_NAMES = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TERM',
  'JAVA_HOME', 'HADOOP_HOME', 'HADOOP_CONF_DIR', 'PYTHONIOENCODING',
];
/** Prefixes of inherited names: locale categories, Spark's and PySpark's settings (SPARK_HOME, SPARK_CONF_DIR, SPARK_LOCAL_IP, ...). */
export const DRIVER_ENV_PREFIXES = ['LC_', 'SPARK_', 'PYSPARK_'];

/** The part of `env` (the service's) a driver starts with. */
export function driverEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || SERVICE_SECRETS.includes(name)) continue;
    if (DRIVER_ENV_NAMES.includes(name) || DRIVER_ENV_PREFIXES.some((prefix) => name.startsWith(prefix))) kept[name] = value;
  }
  return kept;
}

/**
 * `--dir` 0755 for each directory between a hidden path's tmpfs and a readable path below it:
 * left to itself bwrap gives them the mode of the real ones (0700 for /root/.cache), and the
 * driver's user could not walk down to the virtualenv.
 */
function openWay(path: string, hidden: string[]): string[] {
  const below = (p: string, dir: string) => p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
  const root = hidden.filter((dir) => below(path, dir)).sort((a, b) => b.length - a.length)[0];
  const dirs: string[] = [];
  if (root !== undefined) for (let dir = dirname(path); below(dir, root); dir = dirname(dir)) dirs.unshift(dir);
  return dirs.flatMap((dir) => ['--perms', '0755', '--dir', dir]);
}

/** The env variable naming a kernel's launcher token file (domain/launcher-credential.ts). */
export const LAUNCHER_TOKEN_ENV = LAUNCHER_TOKEN_FILE_ENV;

/**
 * A kernel's one-time launcher token lies in the data dir, which the sandbox hides: it moves into
 * the driver's own work dir (the launcher reads and deletes it there), and the env names it as
 * the driver sees it. Moved, not bound: the service keeps writing into the token's directory,
 * and a driver that owned it could plant a symlink there.
 */
export function moveLauncherToken(command: LocalCommand, sandbox: DriverSandbox, workDir: string): LocalCommand {
  const file = command.env[LAUNCHER_TOKEN_ENV];
  if (!file || !isAbsolute(file) || !resolve(file).startsWith(`${resolve(sandbox.dataDir)}/`) || !existsSync(file)) return command;
  const moved = join(workDir, 'launcher-token');
  try {
    renameSync(file, moved);
  } catch (error) {
    // A work dir on a tmpfs of its own (work-dir-space.ts): copied (never over a file), then removed.
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    copyFileSync(file, moved, constants.COPYFILE_EXCL);
    unlinkSync(file);
  }
  if (sandbox.user) chownSync(moved, sandbox.user.uid, sandbox.user.gid);
  return { ...command, env: { ...command.env, [LAUNCHER_TOKEN_ENV]: join(SANDBOX_WORK_DIR, 'launcher-token') } };
}

/**
 * A tmpfs is memory: unbounded, a driver writing into one would take the machine's memory (its
 * own work dir has its cap, work-dir-space.ts). Its /tmp holds what Python and the JVM put there
 * by a fixed path (their temp files go to the work dir, driver-temp.ts, and Spark's own scratch to
 * SPARK_LOCAL_DIRS, the work dir); the masks over hidden paths hold only the mount points of the
 * readable paths below them.
 */
export const SANDBOX_TMP_BYTES = 256 * 2 ** 20;
const MASK_BYTES = 2 ** 20;

/** bwrap's arguments for a driver whose only writable place is `workDir`. */
export function sandboxArgs(sandbox: DriverSandbox, workDir: string): string[] {
  // A /tmp of its own, writable by the driver's user as a /tmp is (sticky, 1777).
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--perms', '1777', '--size', String(SANDBOX_TMP_BYTES), '--tmpfs', '/tmp'];
  for (const path of sandbox.hidden) args.push('--size', String(MASK_BYTES), '--tmpfs', path);
  for (const path of sandbox.readable) args.push(...openWay(path, ['/tmp', ...sandbox.hidden]), '--ro-bind', path, path);
  args.push('--size', String(MASK_BYTES), '--tmpfs', sandbox.dataDir);
  args.push('--bind', workDir, SANDBOX_WORK_DIR, '--chdir', SANDBOX_WORK_DIR);
  // No cgroup namespace: the JVM reads its memory limits from /proc/self/cgroup and fails inside one.
  args.push('--unshare-pid', '--unshare-ipc');
  // No --new-session: the service ends a driver by its process group, which must include it.
  args.push('--setenv', 'HOME', SANDBOX_WORK_DIR);
  for (const name of SERVICE_SECRETS) args.push('--unsetenv', name);
  if (sandbox.user) args.push('--cap-add', 'CAP_SETUID,CAP_SETGID');
  else args.push('--unshare-user');
  return args;
}

/** The driver's command, started inside the sandbox (and as the driver user when there is one). */
export function sandboxedCommand(command: LocalCommand, sandbox: DriverSandbox, workDir: string): LocalCommand {
  const drop = sandbox.user
    ? [sandbox.user.setpriv, `--reuid=${sandbox.user.uid}`, `--regid=${sandbox.user.gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--']
    : [];
  return { command: sandbox.bwrap, args: [...sandboxArgs(sandbox, workDir), '--', ...drop, command.command, ...command.args], env: command.env };
}

/** A program on PATH, as an absolute path. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir || '.', name);
    try {
      accessSync(candidate, constants.X_OK);
      return resolve(candidate);
    } catch { /* next */ }
  }
  return undefined;
}

/** uid and gid of a user name (or a numeric uid) from /etc/passwd. */
export function lookupUser(name: string): { uid: number; gid: number } | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name || uid === name) return { uid: Number(uid), gid: Number(gid) };
  }
  return /^\d+$/.test(name) ? { uid: Number(name), gid: Number(name) } : undefined;
}

export interface SandboxSetup {
  dataDir: string;
  /** Paths drivers must read even when they lie in a hidden one (the virtualenv, the package root). */
  readable: string[];
  /** The user drivers run as when the service is root (a name or uid; default `nobody`). */
  driverUser?: string;
}

export type SandboxProbe = { ok: true; sandbox: DriverSandbox } | { ok: false; problem: string };

/**
 * The sandbox this machine offers, tried once with a real `bwrap` run (a missing binary, user
 * namespaces turned off or a refused mount all show here, not in the first driver's log).
 */
export function findSandbox(setup: SandboxSetup): SandboxProbe {
  const bwrap = onPath('bwrap');
  if (!bwrap) return { ok: false, problem: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap' };
  let user: DriverSandbox['user'];
  if (process.getuid?.() === 0) {
    const name = setup.driverUser ?? 'nobody';
    const found = lookupUser(name);
    if (!found || found.uid === 0) return { ok: false, problem: `the driver user "${name}" is unknown or root` };
    const setpriv = onPath('setpriv');
    if (!setpriv) return { ok: false, problem: 'setpriv (util-linux) is not installed' };
    user = { ...found, setpriv };
  }
  const sandbox: DriverSandbox = {
    bwrap, user, dataDir: setup.dataDir,
    hidden: [homedir()].filter((path) => path !== '/' && existsSync(path)),
    readable: [...new Set(setup.readable)].filter((path) => existsSync(path)),
  };
  const probeDir = join(setup.dataDir, 'work');
  mkdirSync(probeDir, { recursive: true, mode: 0o700 });
  const probe = sandboxedCommand({ command: '/bin/true', args: [], env: {} }, sandbox, probeDir);
  const run = spawnSync(probe.command, probe.args, { encoding: 'utf8', timeout: 30_000 });
  if (run.status !== 0) return { ok: false, problem: `bwrap does not run here: ${(run.stderr || run.error?.message || `exit ${run.status}`).trim()}` };
  return { ok: true, sandbox };
}
