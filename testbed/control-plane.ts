// The test bed's control plane: the Go program of test/cluster (etcd, kube-apiserver, the
// garbage collector, optionally kube-scheduler in one process), built once per source hash,
// started in a directory and ready once it prints "READY <kubeconfig> <server>".
// One starter for `testbed up`, the tests and the benches.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from '../lib/free-port.js';
import { logTail } from './log-tail.js';

const buildScript = fileURLToPath(new URL('../test/cluster/build.sh', import.meta.url));

/** Why the test bed cannot be had here, or undefined when it can. */
export function testbedUnavailable(): string | undefined {
  if (process.env.SUBMISSION_SERVICE_TESTBED || existsSync(buildScript)) return undefined;
  return 'no test bed: SUBMISSION_SERVICE_TESTBED is unset and test/cluster/build.sh is missing';
}

/** The test bed binary: $SUBMISSION_SERVICE_TESTBED, or built (once, cached) by test/cluster/build.sh. */
export function testbedBinary(): string {
  const given = process.env.SUBMISSION_SERVICE_TESTBED;
  if (given && existsSync(given)) return given;
  const out = execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

/** One running test bed process. */
export interface Testbed {
  child: ChildProcess;
  kubeconfig: string;
  server: string;
  port: number;
  /** SIGTERM (or the given signal), then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export interface TestbedOptions {
  scheduler?: boolean;
  /** The apiserver's port; a free one when absent. */
  port?: number;
  /** Start the cluster an earlier run left in the directory again (its PKI and etcd data). */
  keep?: boolean;
  /** For a real kubelet: ServiceAccount admission and the controllers it needs (test/cluster/README.md). */
  nodeControllers?: boolean;
  /** For a real node's pods: the machine's address the "kubernetes" Service points at (the apiserver then listens on all addresses). */
  advertiseAddress?: string;
  readyTimeoutMs?: number;
}

const running = new Set<ChildProcess>();
// A process that ends without stopping its test bed (a crashed test) must not leave a control plane behind.
process.once('exit', () => { for (const child of running) child.kill('SIGKILL'); });

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** Starts the test bed in `dir` (its log: DIR/testbed.log) and resolves once the apiserver is ready. */
export async function startTestbed(dir: string, options: TestbedOptions = {}): Promise<Testbed> {
  mkdirSync(dir, { recursive: true });
  const port = options.port ?? await freePort();
  const logFile = join(dir, 'testbed.log');
  const log = openSync(logFile, 'a');
  const args = ['--dir', dir, '--port', String(port), ...(options.scheduler ? ['--scheduler'] : []), ...(options.keep ? ['--keep'] : []), ...(options.nodeControllers ? ['--node-controllers'] : []),
    ...(options.advertiseAddress ? ['--advertise-address', options.advertiseAddress] : [])];
  const child = spawn(testbedBinary(), args, { stdio: ['ignore', 'pipe', log] });
  closeSync(log);
  running.add(child);
  const gone = new Promise<void>((ok) => child.once('exit', () => { running.delete(child); ok(); }));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000) => {
    if (exited(child)) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(timer);
  };
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  try {
    const { kubeconfig, server } = await new Promise<{ kubeconfig: string; server: string }>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`the test bed was not ready within ${readyTimeoutMs} ms; see ${logFile}`)), readyTimeoutMs);
      child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`the test bed exited (${code}) before it was ready: ${logTail(logFile, 15)}`)); });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const [word, kubeconfig, server] = line.split(' ');
        if (word === 'READY') { clearTimeout(timer); ok({ kubeconfig, server }); }
      });
    });
    return { child, kubeconfig, server, port, stop };
  } catch (error) {
    await stop('SIGKILL');
    throw error;
  }
}

