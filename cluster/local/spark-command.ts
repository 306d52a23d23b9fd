// Turns an admitted driver pod into the local process that plays its part: the
// container's spark-submit arguments, with master local[N], as the image's entrypoint
// would run them. `$(VAR)` is expanded from the pod's env as the kubelet does.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import { DRIVER_CONTAINER } from '../../domain/index.js';
import type { LocalCommand, SubmitParts } from './local-command.js';
import { pythonFirstCommand } from './python-first.js';
import { type DriverSandbox, SANDBOX_WORK_DIR } from './sandbox.js';
import { sandboxedConf } from './sandbox-event-log.js';
import { UI_GATE_CLASS, UI_GATE_ENV } from './ui-gate.js';
import { CONNECT_SERVER_CLASS, CONNECT_SERVER_TOKEN_ENV } from './connect-server-token.js';
import { driverTemp } from './driver-temp.js';
import { connectGateConf } from '../../domain/connect-gate.js';

export interface LocalMachine {
  sparkSubmit: string;
  python?: string;
  workDir: string;
  /** The port of this driver's Spark UI (each local driver gets its own; the dashboard proxies it). */
  uiPort?: number;
  /**
   * Start a Python main file with `python` itself (spark-submit's options in PYSPARK_SUBMIT_ARGS),
   * as Spark's own `bin/pyspark` does: for interactive drivers, whose Python must answer before
   * the JVM is up (cluster/local/python-first.ts). Needs `python`; other main files are unaffected.
   */
  pythonFirst?: boolean;
  /** Start the driver inside this sandbox (cluster/local/sandbox.ts); undefined: as the service's own user. */
  sandbox?: DriverSandbox;
  /** Put the service's gate on the driver's Spark UI (ui-gate.ts): its compiled classes and this run's secret. */
  uiGate?: { classes: string; secret: string };
  /** The token a Spark Connect server driver asks every call for (connect-server-token.ts); set only when its main class is Spark's SparkConnectServer. */
  connectToken?: string;
  /** The jar of the gate that checks that token on a Spark 3.5 Connect server (connect-gate.ts); put on only when its main class is SparkConnectServer. */
  connectGate?: string;
}

const LOOPBACK = '127.0.0.1';
/** spark-submit options that take no value. */
const SUBMIT_FLAGS = new Set(['--verbose', '-v', '--supervise']);

/** Task slots an app asks for (executor cores x instances), capped at the machine's so it can ever start. */
export function localCores(config: ApplicationConfig | undefined, machineCores: number): number {
  const executor = config?.executor ?? {};
  return Math.max(1, Math.min(machineCores, (executor.cores ?? 1) * Math.max(1, executor.instances ?? 1)));
}

/** Values the kubelet would give env vars that come from the pod's status. */
function fieldValue(fieldPath: string): string {
  return fieldPath === 'status.podIP' || fieldPath === 'status.hostIP' ? LOOPBACK : '';
}

function podEnv(pod: V1Pod, machine: LocalMachine): Record<string, string> {
  const env: Record<string, string> = {};
  const container = pod.spec?.containers.find((c) => c.name === DRIVER_CONTAINER) ?? pod.spec?.containers[0];
  for (const variable of container?.env ?? []) {
    env[variable.name] = variable.value ?? fieldValue(variable.valueFrom?.fieldRef?.fieldPath ?? '');
  }
  env.SPARK_LOCAL_DIRS = machine.sandbox ? SANDBOX_WORK_DIR : machine.workDir;
  // Spark's web UI binds SPARK_LOCAL_IP, else every interface (spark.driver.bindAddress binds the
  // RPC only): set last, over whatever the pod says (domain/local-binding.ts refuses it there).
  env.SPARK_LOCAL_IP = LOOPBACK;
  return env;
}

const expand = (arg: string, env: Record<string, string>) =>
  arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);

const POD_PORT = /^spark\.driver\.(port|blockManager\.port)=/;
/** The pod's say on where the driver listens: ours come first and a later --conf would win. */
const POD_BINDING = /^spark\.(driver\.bindAddress|ui\.port)=/;

const localPath = (arg: string) => (arg.startsWith('local://') ? arg.slice('local://'.length) : arg);

/** Where the pod's own --conf line of `name` is among `options` (-1: none). */
const confAt = (options: string[], name: string): number =>
  options.findIndex((value, index) => options[index - 1] === '--conf' && value.startsWith(`${name}=`));

/**
 * Puts `ours` into the driver's `name` list (`separator`-joined), whatever the pod says of it:
 * into the pod's own --conf line (one line: a later one would win over ours) or on a line of
 * its own. `first`: ours before the pod's, else after.
 */
function mergeConf(options: string[], name: string, ours: string, separator: string, first: boolean): void {
  const at = confAt(options, name);
  if (at < 0) { options.push('--conf', `${name}=${ours}`); return; }
  const theirs = options[at]!.slice(name.length + 1);
  options[at] = `${name}=${first ? `${ours}${separator}${theirs}` : `${theirs}${separator}${ours}`}`;
}

/**
 * The gate on the driver's Spark UI (ui-gate.ts): first among the UI's filters and on the
 * driver's class path, whatever the pod says of either (its own are kept after ours); the
 * secret in the environment, never on the command line (other drivers cannot read this one's
 * environment: each has its own PID namespace in the sandbox).
 */
function gateTheUi(options: string[], env: Record<string, string>, gate: { classes: string; secret: string }): void {
  mergeConf(options, 'spark.ui.filters', UI_GATE_CLASS, ',', true);
  mergeConf(options, 'spark.driver.extraClassPath', gate.classes, ':', true);
  env[UI_GATE_ENV] = gate.secret;
}

/**
 * The gate on a Spark 3.5 Connect server (connect-gate.ts), as Kubernetes mode's sessions get it
 * too (domain/connect-gate.ts): its jar first in spark.jars and its class last among the
 * interceptors, written into the pod's own --conf lines (a later line would win over ours).
 */
function gateTheConnectServer(options: string[], jar: string): void {
  const own = (name: string) => { const at = confAt(options, name); return at < 0 ? undefined : options[at]!.slice(name.length + 1); };
  setConfs(options, connectGateConf(own, jar));
}

/** Sets each of `confs` on the driver's line, in place of the pod's own --conf line of that name if it has one. */
function setConfs(options: string[], confs: Record<string, string>): void {
  for (const [name, value] of Object.entries(confs)) {
    const at = confAt(options, name);
    if (at < 0) options.push('--conf', `${name}=${value}`);
    else options[at] = `${name}=${value}`;
  }
}

/** The main class a driver pod runs (its spark-submit `--class`), if it names one. */
export function driverMainClass(pod: V1Pod): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === DRIVER_CONTAINER) ?? pod.spec?.containers[0];
  const args = container?.args ?? [];
  const at = args.indexOf('--class');
  return at >= 0 ? args[at + 1] : undefined;
}

/** The pod's spark-submit line made local: our options, the primary resource, the app's arguments. */
export function localSubmitParts(pod: V1Pod, machine: LocalMachine, cores: number): SubmitParts {
  const container = pod.spec?.containers.find((c) => c.name === DRIVER_CONTAINER) ?? pod.spec?.containers[0];
  const [role, ...rest] = container?.args ?? [];
  if (role !== 'driver') throw new Error('the pod is not an admitted driver pod (its container arguments do not start with "driver")');
  const env = podEnv(pod, machine);
  const options = ['--deploy-mode', 'client', '--conf', `spark.driver.bindAddress=${LOOPBACK}`];
  if (machine.uiPort !== undefined) options.push('--conf', `spark.ui.port=${machine.uiPort}`);
  // spark-submit's own options (`--name value` pairs, the flags below) come before the primary
  // resource; what follows it is the application's, passed on as written (a `--master` there
  // is the application's argument, not ours to rewrite).
  let i = 0;
  for (; i < rest.length && rest[i].startsWith('-'); i++) {
    if (rest[i] === '--master') options.push('--master', `local[${cores}]`);
    // A pod has its own address, so its fixed ports (7078, 7079) never collide; drivers that
    // share this machine take free ones instead (Spark tries only 16 above a fixed port).
    else if (rest[i] === '--conf' && POD_PORT.test(rest[i + 1] ?? '')) options.push('--conf', (rest[i + 1] ?? '').replace(/=.*$/, '=0'));
    else if (rest[i] === '--conf' && POD_BINDING.test(rest[i + 1] ?? '')) { /* dropped: loopback and the UI port are the service's */ }
    else if (SUBMIT_FLAGS.has(rest[i])) { options.push(rest[i]); continue; }
    else {
      const value = localPath(expand(rest[i + 1] ?? '', env));
      // A sandboxed driver writes its event log into its own work dir (sandbox-event-log.ts).
      options.push(rest[i], rest[i] === '--conf' ? sandboxedConf(value, machine.sandbox) : value);
    }
    i++;
  }
  if (machine.uiGate) gateTheUi(options, env, machine.uiGate);
  // Temp files into the work dir (driver-temp.ts): the service's, over the pod's (its option
  // last: the JVM takes the last of a property), as SPARK_LOCAL_DIRS is.
  const temp = driverTemp(machine.sandbox);
  if (temp) {
    Object.assign(env, temp.env);
    mergeConf(options, 'spark.driver.extraJavaOptions', temp.javaOption, ' ', false);
    setConfs(options, temp.conf);
  }
  const classAt = options.indexOf('--class');
  const mainClass = classAt >= 0 ? options[classAt + 1] : undefined;
  // The service's own secret, over anything the pod said (connect-server-token.ts).
  if (machine.connectToken && mainClass === CONNECT_SERVER_CLASS) env[CONNECT_SERVER_TOKEN_ENV] = machine.connectToken;
  if (machine.connectGate && mainClass === CONNECT_SERVER_CLASS) gateTheConnectServer(options, machine.connectGate);
  const primary = i < rest.length ? localPath(expand(rest[i], env)) : undefined;
  const appArgs = rest.slice(i + 1).map((arg) => localPath(expand(arg, env)));
  if (machine.python) Object.assign(env, { PYSPARK_PYTHON: machine.python, PYSPARK_DRIVER_PYTHON: machine.python });
  return { options, primary, appArgs, env };
}

export function localDriverCommand(pod: V1Pod, machine: LocalMachine, cores: number): LocalCommand {
  const parts = localSubmitParts(pod, machine, cores);
  if (machine.pythonFirst && machine.python && parts.primary?.endsWith('.py')) {
    return pythonFirstCommand({ ...parts, primary: parts.primary }, machine.python);
  }
  const args = [...parts.options, ...(parts.primary === undefined ? [] : [parts.primary]), ...parts.appArgs];
  return { command: machine.sparkSubmit, args, env: parts.env };
}
