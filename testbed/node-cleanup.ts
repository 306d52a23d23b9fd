// Undoing what a real node did to this machine, from what its state file recorded before
// anything started: its processes (by PID), mounts, the pod bridge and veths, iptables
// chains, cgroups, files outside its dir, and the sysctls the kubelet and CNI change. It
// runs after a clean stop and after a crash alike (`testbed down`, the next `up`), so each
// step tolerates finding nothing; only a state file starts it.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BRIDGE, type NodePaths } from './node-config.js';
import { destroyPolicyIpsets } from './node-policy.js';

/** Host paths the kubelet, containerd and CNI write to whatever their config says. */
export const HOST_PATHS = ['/var/lib/kubelet', '/var/log/containers', '/var/log/pods', '/var/lib/cni', '/run/containerd'];
/** Host settings the kubelet (kernel.*, vm.*) and the bridge plugin (ip_forward) change. */
export const SYSCTLS = ['kernel.panic', 'kernel.panic_on_oops', 'vm.overcommit_memory', 'net.ipv4.ip_forward'];
/** Cgroups the kubelet makes (cgroupfs driver, root "/"), in every hierarchy. */
const CGROUP_DIRS = ['kubepods'];
/** iptables chains the kubelet, kube-proxy, the CNI plugins and kube-router create. */
const OUR_CHAINS = /^(KUBE-|CNI-)/;

/** What `startRealNode` writes before starting anything, so a crash can still be undone. */
export interface NodeState {
  owner: number;
  binDir: string;
  pids: Record<string, number>;
  sysctls: Record<string, string>;
  /** Of HOST_PATHS and the cgroups, those that did not exist before: removed again. */
  created: string[];
}

export function readNodeState(p: NodePaths): NodeState | undefined {
  try { return JSON.parse(readFileSync(p.state, 'utf8')) as NodeState; } catch { return undefined; }
}
export const writeNodeState = (p: NodePaths, state: NodeState) => writeFileSync(p.state, JSON.stringify(state, null, 2));

export const readSysctl = (name: string) => readFileSync(`/proc/sys/${name.replaceAll('.', '/')}`, 'utf8').trim();
const writeSysctl = (name: string, value: string) => writeFileSync(`/proc/sys/${name.replaceAll('.', '/')}`, value);

/** The cgroup directories the kubelet would create, in every mounted hierarchy. */
export function kubeletCgroups(): string[] {
  let hierarchies: string[] = [];
  try { hierarchies = readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h)); } catch { /* no cgroupfs */ }
  return hierarchies.flatMap((h) => CGROUP_DIRS.map((d) => join(h, d)));
}

/** The host's state before a node starts: the sysctls to restore and what is there already. */
export function hostBefore(): Pick<NodeState, 'sysctls' | 'created'> {
  const sysctls = Object.fromEntries(SYSCTLS.map((name) => [name, readSysctl(name)]));
  return { sysctls, created: [...HOST_PATHS, ...kubeletCgroups()].filter((path) => !existsSync(path)) };
}

const cmdline = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'); } catch { return undefined; } };
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

/** Processes of this node still running: its daemons, their shims, and every pod's processes. */
export function nodeProcesses(p: NodePaths, state: NodeState): number[] {
  const found = new Set<number>();
  // A recorded PID counts only while it still runs our binary (PIDs are reused).
  for (const pid of Object.values(state.pids)) if (cmdline(pid)?.some((arg) => arg.startsWith(state.binDir))) found.add(pid);
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const args = cmdline(pid);
    // A shim names the containerd that started it: `-address <our socket>`.
    if (args?.some((arg) => arg.endsWith('containerd-shim-runc-v2')) && args.includes(p.socket)) found.add(pid);
  }
  for (const cgroup of state.created.filter((path) => path.startsWith('/sys/fs/cgroup/'))) {
    for (const pid of pidsUnder(cgroup)) found.add(pid);
  }
  return [...found].filter(alive);
}

function pidsUnder(dir: string): number[] {
  const pids: number[] = [];
  const walk = (d: string) => {
    try { pids.push(...readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)); } catch { return; }
    for (const name of readdirSync(d)) if (statSync(join(d, name)).isDirectory()) walk(join(d, name));
  };
  walk(dir);
  return pids;
}

/** Mount points at or below one of `roots`, deepest first. */
export function mountsUnder(roots: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((line) => line.split(' ')[4].replace(/\\040/g, ' '));
  return points.filter((point) => roots.some((root) => point === root || point.startsWith(`${root}/`)))
    .sort((a, b) => b.length - a.length);
}

/** Network devices of the pod network: the bridge and the veths still attached to it. */
export function podNetworkDevices(): string[] {
  const run = (args: string[]) => { try { return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }); } catch { return ''; } };
  const names = (out: string) => out.split('\n').map((line) => /^\d+: ([^:@]+)/.exec(line)?.[1]).filter((name): name is string => !!name);
  return [...names(run(['-o', 'link', 'show', 'master', BRIDGE])), ...names(run(['-o', 'link', 'show', 'dev', BRIDGE]))];
}

const IPTABLES = ['iptables', 'ip6tables']; // whichever backend the alternatives pick: the kubelet calls these too
const TABLES = ['filter', 'nat', 'mangle'];

/** Our chains left in iptables, as "command table chain". */
export function nodeChains(): string[] {
  const left: string[] = [];
  for (const command of IPTABLES) {
    for (const table of TABLES) {
      for (const line of iptablesSave(command, table)) {
        const chain = /^:(\S+)/.exec(line)?.[1];
        if (chain && OUR_CHAINS.test(chain)) left.push(`${command} ${table} ${chain}`);
      }
    }
  }
  return left;
}

function iptablesSave(command: string, table: string): string[] {
  try { return execFileSync(`${command}-save`, ['-t', table], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n'); } catch { return []; }
}

/** Removes every rule that jumps to one of our chains, then the chains, in one restore per table. */
function removeChains(): void {
  for (const command of IPTABLES) {
    for (const table of TABLES) {
      const lines = iptablesSave(command, table);
      const chains = lines.map((line) => /^:(\S+)/.exec(line)?.[1]).filter((c): c is string => !!c && OUR_CHAINS.test(c));
      if (chains.length === 0) continue;
      // Rules of other chains that jump to ours (ours are flushed whole).
      const jumps = lines.filter((line) => line.startsWith('-A ') && !OUR_CHAINS.test(line.split(' ')[1]) && / -j (KUBE-|CNI-)/.test(line));
      const script = [`*${table}`, ...jumps.map((line) => `-D ${line.slice(3)}`), ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`), 'COMMIT', ''].join('\n');
      try {
        execFileSync(`${command}-restore`, ['--noflush'], { input: script, stdio: ['pipe', 'ignore', 'pipe'] });
      } catch (error) {
        process.stderr.write(`testbed: removing ${command} ${table} chains: ${(error as Error).message}\n`);
      }
    }
  }
}

function removeCgroup(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) if (statSync(join(dir, name)).isDirectory()) removeCgroup(join(dir, name));
  try { rmdirSync(dir); } catch (error) { process.stderr.write(`testbed: cgroup ${dir}: ${(error as Error).message}\n`); }
}

/**
 * Undoes everything the node at `p` did, if its state file says one was started there;
 * a no-op otherwise. Processes must be gone first (the caller stops them gracefully; what
 * is left is killed here).
 */
export async function cleanUpNode(p: NodePaths): Promise<void> {
  const state = readNodeState(p);
  if (!state) return;
  for (let round = 0; round < 50; round++) {
    const left = nodeProcesses(p, state);
    if (left.length === 0) break;
    for (const pid of left) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  const roots = [p.dir, ...state.created.filter((path) => !path.startsWith('/sys/'))];
  for (const point of mountsUnder(roots)) {
    try { execFileSync('umount', ['-l', point], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
  for (const device of podNetworkDevices()) {
    try { execFileSync('ip', ['link', 'delete', device], { stdio: 'ignore' }); } catch { /* went with its peer */ }
  }
  removeChains(); // kube-router's KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-* among them
  destroyPolicyIpsets();
  for (const path of state.created) {
    if (path.startsWith('/sys/fs/cgroup/')) removeCgroup(path);
    else rmSync(path, { recursive: true, force: true });
  }
  for (const [name, value] of Object.entries(state.sysctls)) {
    try { if (readSysctl(name) !== value) writeSysctl(name, value); } catch (error) { process.stderr.write(`testbed: sysctl ${name}: ${(error as Error).message}\n`); }
  }
  for (const sub of ['containerd', 'kubelet', 'cni', 'pod-logs']) rmSync(join(p.dir, sub), { recursive: true, force: true });
  rmSync(p.state, { force: true });
}
