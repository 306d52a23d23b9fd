// A control plane with a real node for a test (testbed/real-node.ts): the test bed with the
// scheduler and the node controllers in a temp dir, then containerd and the kubelet. The
// node is stopped, and what it did to the machine undone, in the test's teardown (or
// earlier by the test, to check that nothing is left).
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { CoreV1Api, Exec, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { nodeIp, type RealNode, startRealNode } from '../../testbed/real-node.js';
import { startTestbed, type Testbed } from '../../testbed/control-plane.js';
import { tempDir } from './temp.js';

export { realNodeUnavailable } from '../../testbed/real-node.js';

interface TestLike { teardown(fn: () => unknown): void }

export interface RealNodeBed {
  dir: string;
  testbed: Testbed;
  node: RealNode;
  kc: KubeConfig;
  core: CoreV1Api;
}

/** `images`: OCI archives the node has from its start (unpacked once per machine, not per test: testbed/node-images.ts). */
export async function startRealNodeBed(t: TestLike, options: { enforceNetworkPolicy?: boolean; images?: string[] } = {}): Promise<RealNodeBed> {
  const dir = tempDir(t, 'subsvc-node-');
  const testbed = await startTestbed(join(dir, 'testbed'), { scheduler: true, nodeControllers: true, advertiseAddress: nodeIp() });
  let node: RealNode | undefined;
  // Registered after tempDir's teardown, so both run before the directory goes.
  t.teardown(async () => {
    await node?.stop().catch((error: Error) => process.stderr.write(`real node: ${error.message}\n`));
    await testbed.stop();
  });
  node = await startRealNode({ dir: join(dir, 'node'), kubeconfig: testbed.kubeconfig, nodeKubeconfig: join(dir, 'testbed', 'node.kubeconfig'), caFile: join(dir, 'testbed', 'pki', 'ca.crt'), ...options });
  const kc = new KubeConfig();
  kc.loadFromFile(testbed.kubeconfig);
  return { dir, testbed, node, kc, core: kc.makeApiClient(CoreV1Api) };
}

/** stdout of `command` run in a pod's container through the apiserver (what `kubectl exec` does); fails unless it exits 0. */
export async function execInPod(kc: KubeConfig, namespace: string, pod: string, container: string, command: string[]): Promise<string> {
  const out = new PassThrough();
  let output = '';
  out.on('data', (d: Buffer) => { output += d.toString(); });
  const status = await new Promise<string>((ok, fail) => {
    new Exec(kc).exec(namespace, pod, container, command, out, null, null, false, (s) => ok(s.status ?? 'none')).catch(fail);
  });
  if (status !== 'Success') throw new Error(`${command.join(' ')} in ${pod}: ${status}`);
  return output;
}

/** Lets the tasks of test/fixtures/recurring/held.py that run in `executor` end: writes the file they wait for. */
export async function releaseHeldTasks(kc: KubeConfig, namespace: string, executor: V1Pod): Promise<void> {
  await execInPod(kc, namespace, executor.metadata!.name!, executor.spec!.containers[0]!.name, ['touch', '/tmp/held-release']);
}
