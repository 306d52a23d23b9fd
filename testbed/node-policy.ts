// The real node's NetworkPolicy enforcer (opt-in: `enforceNetworkPolicy`): the bridge CNI
// plugin implements no NetworkPolicy, so kube-router runs beside it with only its
// network-policy controller (no routing, no service proxy; the bridge plugin and kube-proxy
// keep those jobs). It turns each policy into iptables chains and ipsets: pod-to-pod traffic
// on the one bridge reaches those chains because the machine's bridge passes frames through
// iptables (net.bridge.bridge-nf-call-iptables), and a refused connection is REJECTed, so the
// client sees "connection refused" at once. Built by test/node/build.sh from its Go module.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The control plane's --service-cluster-ip-range (test/cluster/main.go): kube-router needs it. */
export const SERVICE_CIDR = '10.0.0.0/24';
/** The ipsets kube-router's policy controller makes (its KUBE-SRC-/KUBE-DST- prefixes; inet6: for IPv6). */
const POLICY_IPSETS = /^(inet6:)?KUBE-(SRC|DST)-/;
const BRIDGE_NF = '/proc/sys/net/bridge/bridge-nf-call-iptables';

/** Why policies cannot be enforced here, or undefined when they can. */
export function policyEnforcerUnavailable(onPath: (tool: string) => string | undefined): string | undefined {
  if (!onPath('ipset')) return 'enforcing NetworkPolicy needs ipset (scripts/setup.sh installs it with SETUP_TEST_TOOLS=1)';
  let bridgeNf = '';
  try { bridgeNf = readFileSync(BRIDGE_NF, 'utf8').trim(); } catch { /* no br_netfilter */ }
  // Without it, traffic between two pods on the bridge never meets iptables: nothing would be enforced.
  if (bridgeNf !== '1') return `enforcing NetworkPolicy needs br_netfilter with ${BRIDGE_NF} = 1`;
  return undefined;
}

/** kube-router's arguments: the policy controller alone, for the node `nodeName`. */
export function kubeRouterArgs(options: { kubeconfig: string; nodeName: string; healthPort: number }): string[] {
  return [
    '--run-firewall=true', '--run-router=false', '--run-service-proxy=false', '--enable-cni=false',
    '--enable-ipv4=true', '--enable-ipv6=false',
    `--kubeconfig=${options.kubeconfig}`, `--hostname-override=${options.nodeName}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    `--health-port=${options.healthPort}`, '--metrics-port=0', '--v=1',
  ];
}

/** kube-router's ipsets left on the machine (after its chains went: a set in use cannot be destroyed). */
export function policyIpsets(): string[] {
  try {
    return execFileSync('ipset', ['list', '-n'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\n').filter((name) => POLICY_IPSETS.test(name));
  } catch { return []; } // no ipset: kube-router never ran
}

export function destroyPolicyIpsets(): void {
  for (const name of policyIpsets()) {
    try { execFileSync('ipset', ['destroy', name], { stdio: 'ignore' }); } catch (error) {
      process.stderr.write(`testbed: ipset ${name}: ${(error as Error).message}\n`);
    }
  }
}

/** Whether kube-router has written `policy` into the chain of the pod `pod` (in `namespace`). */
export function policyEnforcedFor(policy: string, pod: string, namespace: string): boolean {
  let rules = '';
  try { rules = execFileSync('iptables-save', ['-t', 'filter'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }); } catch { return false; }
  const podChain = rules.split('\n').find((line) => line.includes(`REJECT traffic destined for POD name:${pod} namespace: ${namespace}`))?.split(' ')[1];
  return !!podChain && rules.split('\n').some((line) => line.startsWith(`-A ${podChain} `) && line.includes(`run through nw policy ${policy}`));
}
