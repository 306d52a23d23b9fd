// A real node beside the test bed's control plane (`testbed up --real-node`, and the tests
// that need one): containerd 2.x with Debian's runc and the bridge CNI plugin, the kubelet
// of the control plane's own Kubernetes version and cluster DNS (CoreDNS on the bridge's
// address) and kube-proxy (ClusterIP Services), all built by test/node/build.sh. Pods run
// in containers with their own network; `down` (or the next start) undoes every change to
// the machine (node-cleanup.ts). One node per machine: port 10250 and the paths the kubelet
// hard-codes are the machine's, so a lock file says who has it.
import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { logTail } from './log-tail.js';
import { containerdAnswers, exited, spawnDaemon, terminate, waitFor } from './node-daemons.js';
import { imageStore, importImage, seedRoot } from './node-images.js';
import { cleanUpNode, hostBefore, readNodeState, writeNodeState, type NodeState } from './node-cleanup.js';
import { BRIDGE, cniConfig, containerdConfig, corefile, GATEWAY, kubeletConfig, kubeProxyConfig, nodePaths, type NodePaths, POD_SUBNET } from './node-config.js';
import { kubeRouterArgs, policyEnforcerUnavailable } from './node-policy.js';
import { freePort } from '../lib/free-port.js';

const run = promisify(execFile);
const buildScript = fileURLToPath(new URL('../test/node/build.sh', import.meta.url));
/** Who holds this machine's one node: `{ dir, owner }`. */
export const NODE_LOCK = '/run/submission-service-testbed-node.json';
export const NODE_NAME = 'testbed-node';

/** Why a real node cannot run here, or undefined when it can. */
export function realNodeUnavailable(options: { enforceNetworkPolicy?: boolean } = {}): string | undefined {
  if (process.platform !== 'linux') return 'a real node needs Linux';
  if (process.getuid?.() !== 0) return 'a real node needs root (mounts, network namespaces, cgroups, iptables)';
  for (const tool of ['runc', 'iptables', 'ip', 'umount']) {
    if (!onPath(tool)) return `a real node needs ${tool} (scripts/setup.sh installs runc and iptables with SETUP_TEST_TOOLS=1)`;
  }
  if (!process.env.SUBMISSION_SERVICE_NODE && !existsSync(buildScript)) return 'test/node/build.sh is missing';
  return options.enforceNetworkPolicy ? policyEnforcerUnavailable(onPath) : undefined;
}

function onPath(tool: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin'];
  return dirs.map((dir) => join(dir, tool)).find((path) => existsSync(path));
}

/** The directory with the node's binaries and images: $SUBMISSION_SERVICE_NODE, or built (once, cached). */
export function nodeBinDir(): string {
  const given = process.env.SUBMISSION_SERVICE_NODE;
  if (given && existsSync(given)) return given;
  const out = execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').at(-1)!;
}

/** This machine's address for the node (the kubelet serves on it; loopback is refused as a node IP). */
export function nodeIp(): string {
  const all = networkInterfaces();
  const usable = (name: string) => (all[name] ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
  const name = ['eth0', ...Object.keys(all).filter((n) => n !== BRIDGE && !n.startsWith('veth'))].find(usable);
  if (!name) throw new Error('no non-loopback IPv4 address for the node');
  return usable(name)!;
}

export interface RealNode {
  name: string;
  ip: string;
  dir: string;
  /** containerd's socket (CRI and `ctr --address`). */
  socket: string;
  binDir: string;
  /** Imports an OCI archive (a tar of an OCI image layout) into the node's containerd, for pods. */
  importImage(file: string): Promise<void>;
  /** Stops pods, then the kubelet and containerd, and undoes what they did to the machine. */
  stop(): Promise<void>;
}

export interface RealNodeOptions {
  /** The node's directory (the test bed's DIR/node). */
  dir: string;
  kubeconfig: string;
  /** The kubelet's own (system:node:testbed-node); the admin kubeconfig when absent. */
  nodeKubeconfig?: string;
  /** The CA whose certificates the kubelet accepts (the apiserver's admin client certificate). */
  caFile: string;
  readyTimeoutMs?: number;
  /** Run kube-router's network-policy controller (node-policy.ts): NetworkPolicies are enforced. */
  enforceNetworkPolicy?: boolean;
  /** OCI archives whose images the node has from its start, unpacked once for every node (node-images.ts). */
  images?: string[];
}


function takeLock(dir: string): void {
  const held = readLock();
  if (held && held.owner !== process.pid && alive(held.owner)) {
    throw new Error(`a real node already runs on this machine (${held.dir}, process ${held.owner}): one node per machine`);
  }
  writeFileSync(NODE_LOCK, JSON.stringify({ dir, owner: process.pid }));
}

/** Undoes what a node left in `dir`, and what the lock's earlier owner left, if that one died. */
export async function cleanUpRealNode(dir: string): Promise<void> {
  const held = readLock();
  if (held?.dir === dir && held.owner !== process.pid && alive(held.owner)) {
    throw new Error(`the real node in ${dir} is still run by process ${held.owner}: stop that first`);
  }
  if (held && held.dir !== dir && !alive(held.owner)) await cleanUpNode(nodePaths(held.dir));
  await cleanUpNode(nodePaths(dir));
  if (held && (held.dir === dir || !alive(held.owner))) rmSync(NODE_LOCK, { force: true });
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

export async function startRealNode(options: RealNodeOptions): Promise<RealNode> {
  const p = nodePaths(options.dir);
  const binDir = nodeBinDir();
  await cleanUpRealNode(p.dir); // a crashed run's leftovers, here or where the lock points
  takeLock(p.dir);
  mkdirSync(p.dir, { recursive: true });
  // Written before anything starts, so that a crash at any point can be undone.
  const state: NodeState = { owner: process.pid, binDir, pids: {}, ...hostBefore() };
  writeNodeState(p, state);
  const ip = nodeIp();
  const children: Daemons = {};
  let stopping = false;
  let seeded = new Set<string>();
  // A daemon that dies while the node should run says so at once, with its log's last lines:
  // a test that then times out (a Service never routed, a pod never started) names the cause.
  const daemon = (logFile: string, args: string[]) => {
    const child = spawnDaemon(binDir, logFile, args);
    child.once('exit', (code, signal) => {
      if (!stopping) process.stderr.write(`testbed: ${args[0] === 'run' ? basename(args[1]) : args[0]} exited (${code ?? signal}) while the node runs; the end of ${logFile}:\n${logTail(logFile, 20)}\n`);
    });
    return child;
  };
  const stop = async () => {
    stopping = true;
    await stopNode(p, binDir, children);
    const held = readLock();
    if (held?.dir === p.dir) rmSync(NODE_LOCK, { force: true });
  };
  try {
    const runc = onPath('runc')!;
    seeded = await seedImages(p, binDir, runc, options.images ?? []);
    for (const d of [p.cniConfDir, p.cniDataDir, p.kubeletRoot, p.podLogs, p.containerdState]) mkdirSync(d, { recursive: true });
    writeFileSync(p.containerdConfig, containerdConfig(p, binDir, runc));
    writeFileSync(join(p.cniConfDir, '10-testbed.conflist'), cniConfig(p));
    writeFileSync(p.kubeletConfig, kubeletConfig(p, { nodeIp: ip, caFile: options.caFile, clusterDns: GATEWAY }));

    // The bridge with its address before any pod, so cluster DNS can listen on it (the
    // bridge plugin takes the bridge as it finds it).
    const prefix = POD_SUBNET.split('/')[1];
    await run('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${GATEWAY}/${prefix}`, 'dev', BRIDGE]);
    await run('ip', ['link', 'set', BRIDGE, 'up']);
    const readyPort = await freePort();
    writeFileSync(p.corefile, corefile({ kubeconfig: options.kubeconfig, readyPort }));
    const dns = daemon(p.dnsLog, ['run', join(binDir, 'coredns'), '-conf', p.corefile]);
    children.dns = dns;
    state.pids.coredns = dns.pid!;
    writeNodeState(p, state);

    const containerd = daemon(p.containerdLog, ['run', join(binDir, 'containerd'), '--config', p.containerdConfig]);
    children.containerd = containerd;
    state.pids.containerd = containerd.pid!;
    writeNodeState(p, state);
    await containerdAnswers(binDir, p.socket, containerd, p.containerdLog);

    const kubeletKubeconfig = options.nodeKubeconfig && existsSync(options.nodeKubeconfig) ? options.nodeKubeconfig : options.kubeconfig;
    const kubelet = daemon(p.kubeletLog, ['kubelet', '--config', p.kubeletConfig, '--kubeconfig', kubeletKubeconfig,
      '--root-dir', p.kubeletRoot, '--hostname-override', NODE_NAME, '--node-ip', ip, '--v=1']);
    children.kubelet = kubelet;
    state.pids.kubelet = kubelet.pid!;
    writeNodeState(p, state);
    const kc = new KubeConfig();
    kc.loadFromFile(options.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(async () => ready(await core.readNode({ name: NODE_NAME })), kubelet, options.readyTimeoutMs ?? 120_000, `node ${NODE_NAME} Ready (${p.kubeletLog})`);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${readyPort}/ready`, { signal: AbortSignal.timeout(5_000) })).ok, dns, 60_000, `cluster DNS (${p.dnsLog})`);

    // Healthy once it has written the Services' rules (the "kubernetes" Service among them).
    const healthzPort = await freePort();
    writeFileSync(p.kubeProxyConfig, kubeProxyConfig({ kubeconfig: options.kubeconfig, healthzPort, metricsPort: await freePort() }));
    const proxy = daemon(p.kubeProxyLog, ['kube-proxy', '--config', p.kubeProxyConfig, '--v=1']);
    children.proxy = proxy;
    state.pids.kubeProxy = proxy.pid!;
    writeNodeState(p, state);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`, { signal: AbortSignal.timeout(5_000) })).ok, proxy, 60_000, `kube-proxy (${p.kubeProxyLog})`);

    if (options.enforceNetworkPolicy) {
      // Healthy once its policy controller has synced every pod and policy once.
      const healthPort = await freePort();
      const enforcer = daemon(p.kubeRouterLog, ['run', join(binDir, 'kube-router'), ...kubeRouterArgs({ kubeconfig: options.kubeconfig, nodeName: NODE_NAME, healthPort })]);
      children.policy = enforcer;
      state.pids.kubeRouter = enforcer.pid!;
      writeNodeState(p, state);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${healthPort}/healthz`, { signal: AbortSignal.timeout(5_000) })).ok, enforcer, 120_000, `kube-router (${p.kubeRouterLog})`);
    }
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  // An archive the node was seeded with is there already (and the same bytes, the store being keyed by its path).
  return { name: NODE_NAME, ip, dir: p.dir, socket: p.socket, binDir, importImage: async (file) => { if (!seeded.has(file)) await importImage(binDir, p.socket, file); }, stop };
}

/** The node's containerd root, holding from its start the sandbox's and test pods' images and `images`: the archives it holds. */
async function seedImages(p: NodePaths, binDir: string, runc: string, images: string[]): Promise<Set<string>> {
  const store = await imageStore(binDir, runc, [join(binDir, 'pause.tar'), join(binDir, 'testbox.tar'), ...images]);
  seedRoot(store, p.containerdRoot);
  return new Set(store.archives);
}

function readLock(): { dir: string; owner: number } | undefined {
  try { return JSON.parse(readFileSync(NODE_LOCK, 'utf8')) as { dir: string; owner: number }; } catch { return undefined; }
}

export const ready = (node: V1Node) => node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The kubelet first (a running kubelet starts pods again), then every pod through CRI (so
 * CNI removes its veth and address), then containerd; then whatever is left is undone.
 */
type Daemons = Partial<Record<'containerd' | 'dns' | 'kubelet' | 'proxy' | 'policy', ChildProcess>>;

async function stopNode(p: NodePaths, binDir: string, { containerd, dns, kubelet, proxy, policy }: Daemons): Promise<void> {
  await terminate(kubelet, 10_000);
  await terminate(policy, 5_000);
  await terminate(proxy, 5_000);
  await terminate(dns, 5_000);
  if (containerd && !exited(containerd)) {
    await run(join(binDir, 'testnode'), ['stop-pods', p.socket], { timeout: 120_000 })
      .catch((error: Error) => process.stderr.write(`testbed: stopping pods: ${error.message}\n`));
  }
  await terminate(containerd, 10_000);
  if (readNodeState(p)) await cleanUpNode(p);
}
