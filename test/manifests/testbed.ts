// Starts the Kubernetes test bed (real kube-apiserver + etcd, test/cluster) for a test and stops
// it at teardown. Which binary: $SUBMISSION_SERVICE_TESTBED, else what test/cluster/build.sh builds.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';

const buildScript = fileURLToPath(new URL('../cluster/build.sh', import.meta.url));

/** Why the test bed cannot be had here, or undefined when it can. */
export function testbedUnavailable(): string | undefined {
  if (process.env.SUBMISSION_SERVICE_TESTBED || existsSync(buildScript)) return undefined;
  return 'no test bed: SUBMISSION_SERVICE_TESTBED is unset and test/cluster/build.sh is missing';
}

function testbedBinary(): string {
  if (process.env.SUBMISSION_SERVICE_TESTBED) return process.env.SUBMISSION_SERVICE_TESTBED;
  const out = execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

export interface Testbed {
  kc: KubeConfig;
  url: string;
  stop(): Promise<void>;
}

export async function startTestbed(readyTimeoutMs = 120_000): Promise<Testbed> {
  const dir = mkdtempSync(join(tmpdir(), 'ss-testbed-'));
  const child: ChildProcess = spawn(testbedBinary(), ['--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-8000); });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [kubeconfig, url] = await new Promise<[string, string]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`test bed not ready after ${readyTimeoutMs} ms:\n${log}`)), readyTimeoutMs);
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`test bed exited (${code}):\n${log}`)); });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const [word, kubeconfig, url] = line.split(' ');
        if (word === 'READY') { clearTimeout(timer); resolve([kubeconfig, url]); }
      });
    });
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    return { kc, url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
