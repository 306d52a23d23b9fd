// Starts the Kubernetes test bed (real kube-apiserver + etcd, test/cluster) in a temp dir for a
// test and stops it at teardown; the process itself is testbed/control-plane.ts's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { startTestbed as startControlPlane, testbedUnavailable } from '../../testbed/control-plane.js';

export { testbedUnavailable };

export interface Testbed {
  kc: KubeConfig;
  url: string;
  stop(): Promise<void>;
}

export async function startTestbed(readyTimeoutMs = 120_000): Promise<Testbed> {
  const dir = mkdtempSync(join(tmpdir(), 'ss-testbed-'));
  try {
    const bed = await startControlPlane(dir, { readyTimeoutMs });
    const kc = new KubeConfig();
    kc.loadFromFile(bed.kubeconfig);
    return { kc, url: bed.server, stop: async () => { await bed.stop(); rmSync(dir, { recursive: true, force: true }); } };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
