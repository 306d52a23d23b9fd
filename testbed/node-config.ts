// The files a real node runs from: containerd's config, the pod network (CNI) and the
// kubelet's config. Every path is under the node's own directory, except what the kubelet
// and CNI hard-code (node-cleanup.ts removes those). The settings that this machine needs
// and why are in ../shared FIELD-NOTES ("A real node on this machine") and docs/testbed.md.
import { join } from 'node:path';

/** Where one node keeps everything; `dir` is the test bed's DIR/node. */
export function nodePaths(dir: string) {
  return {
    dir,
    state: join(dir, 'state.json'),
    containerdConfig: join(dir, 'containerd.toml'),
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    socket: join(dir, 'containerd.sock'),
    cniConfDir: join(dir, 'cni', 'net.d'),
    cniDataDir: join(dir, 'cni', 'ipam'),
    kubeletConfig: join(dir, 'kubelet.yaml'),
    kubeletRoot: join(dir, 'kubelet'),
    podLogs: join(dir, 'pod-logs'),
    containerdLog: join(dir, 'containerd.log'),
    kubeletLog: join(dir, 'kubelet.log'),
    corefile: join(dir, 'Corefile'),
    dnsLog: join(dir, 'coredns.log'),
    kubeProxyConfig: join(dir, 'kube-proxy.yaml'),
    kubeProxyLog: join(dir, 'kube-proxy.log'),
    kubeRouterLog: join(dir, 'kube-router.log'),
  };
}
export type NodePaths = ReturnType<typeof nodePaths>;

/** The pod network: one bridge on this machine, pods get addresses from `POD_SUBNET`. */
export const BRIDGE = 'testbed0';
export const POD_SUBNET = '10.244.0.0/24';
/** The bridge's own address: the pods' gateway, and where cluster DNS answers them. */
export const GATEWAY = '10.244.0.1';
export const SANDBOX_IMAGE = 'localhost/testbed/pause:1';
export const TEST_IMAGE = 'localhost/testbed/testbox:1';
/** The apiserver's ClusterIP (first of --service-cluster-ip-range in test/cluster/main.go). */
export const KUBERNETES_SERVICE_IP = '10.0.0.1';

const q = (s: string) => `'${s}'`; // TOML literal string: no escapes inside

/** containerd 2.4 (config version 4), CRI only, paths under the node's dir. */
export function containerdConfig(p: NodePaths, binDir: string, runc: string): string {
  return `version = 4
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
imports = []
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.snapshotter.v1.blockfile', 'io.containerd.snapshotter.v1.erofs', 'io.containerd.differ.v1.erofs']

[plugins.'io.containerd.server.v1.grpc']
  address = ${q(p.socket)}
[plugins.'io.containerd.server.v1.ttrpc']
  address = ${q(`${p.socket}.ttrpc`)}
[plugins.'io.containerd.internal.v1.opt']
  path = ${q(join(p.containerdRoot, 'opt'))}
[plugins.'io.containerd.image-verifier.v1.bindir']
  bin_dir = ${q(join(p.containerdRoot, 'image-verifier'))}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  # No registry is reachable: the sandbox image is imported at start and never pulled.
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${q(SANDBOX_IMAGE)}

[plugins.'io.containerd.cri.v1.runtime']
  # This machine refuses a negative oom_score_adj (no CAP_SYS_RESOURCE); without this every
  # sandbox failed in runc ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${q(runc)}
        Root = ${q(join(p.containerdState, 'runc'))}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${q(binDir)}]
    conf_dir = ${q(p.cniConfDir)}

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`;
}

/** Pods on one bridge with their own addresses; no masquerade (nothing outside to reach). */
export function cniConfig(p: NodePaths): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'testbed',
    plugins: [
      {
        type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: false, hairpinMode: true,
        ipam: { type: 'host-local', dataDir: p.cniDataDir, ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }, null, 2);
}

/** The kubelet's config (KubeletConfiguration v1beta1, as JSON, which its YAML reader takes). */
export function kubeletConfig(p: NodePaths, options: { nodeIp: string; caFile: string; clusterDns: string }): string {
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // cgroup v1 here, no systemd: since 1.35 the kubelet refuses v1 unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    // The kubelet may not lower its own oom_score_adj here (see restrict_oom_score_adj).
    oomScoreAdj: 0,
    containerRuntimeEndpoint: `unix://${p.socket}`,
    address: options.nodeIp,
    port: 10250,
    readOnlyPort: 0,
    healthzPort: 0,
    // Only the apiserver (admin client certificate from the test bed's CA) may call it.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: options.caFile } },
    authorization: { mode: 'Webhook' },
    podLogsDir: p.podLogs,
    clusterDomain: 'cluster.local',
    clusterDNS: [options.clusterDns],
    failSwapOn: false,
    // A shared build machine's disk is fuller than a node's would be: evict only when it is truly short.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    registerNode: true,
    nodeStatusUpdateFrequency: '5s',
    syncFrequency: '10s',
    fileCheckFrequency: '20s',
    staticPodPath: '',
  }, null, 2);
}

/**
 * kube-proxy in iptables mode, so ClusterIP Services (the apiserver's "kubernetes" first of
 * all: Spark's driver talks to it from its pod) work from pods. It changes no sysctl here:
 * conntrack limits and timeouts stay the machine's (0 = leave), and no NodePort on
 * localhost (that needs route_localnet). Every Service connection is masqueraded: pods share
 * one bridge without br_netfilter, so a reply from a pod behind a Service would otherwise go
 * straight back over the bridge, past the host's conntrack that undoes the DNAT.
 */
export function kubeProxyConfig(options: { kubeconfig: string; healthzPort: number; metricsPort: number }): string {
  return JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: options.kubeconfig },
    hostnameOverride: 'testbed-node',
    mode: 'iptables',
    clusterCIDR: POD_SUBNET,
    detectLocalMode: 'ClusterCIDR',
    healthzBindAddress: `127.0.0.1:${options.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${options.metricsPort}`,
    // This machine refuses a negative oom_score_adj (see restrict_oom_score_adj).
    oomScoreAdj: 0,
    iptables: { masqueradeAll: true, localhostNodePorts: false, syncPeriod: '30s' },
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    nodePortAddresses: ['primary'],
  }, null, 2);
}

/**
 * Cluster DNS: CoreDNS on the host, on the bridge's address (so pods reach it without
 * kube-proxy), answering for cluster.local from Services and EndpointSlices; nothing else
 * (no upstream is reachable). `ready` answers 200 once the kubernetes plugin has synced.
 */
export function corefile(options: { kubeconfig: string; readyPort: number }): string {
  return `cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
  bind ${GATEWAY}
  errors
  ready 127.0.0.1:${options.readyPort}
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig ${options.kubeconfig}
    pods insecure
    ttl 5
  }
  cache 5
}
`;
}
