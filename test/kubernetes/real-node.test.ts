// Runs alone (scripts/test.sh): a real node is one per machine (port 10250, the paths the
// kubelet hard-codes, its iptables chains), so no other test may start one beside it.
//
// The test bed with a real node (testbed/real-node.ts): containerd with Debian's runc, the
// bridge CNI plugin and the kubelet of the control plane's version. Pods run in containers
// from an image imported without a registry; their logs, exec and port-forward come through
// the apiserver; a pod reaches another over the pod network and by its Service's name
// (cluster DNS), and through a ClusterIP Service (kube-proxy), the apiserver's own among them;
// the endpointslice and service-account controllers do their part. Then the node is stopped and nothing of it is
// left on the machine: no process, mount, network device, iptables chain, cgroup or file,
// and the sysctls the kubelet changed are back.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Resolver } from 'node:dns/promises';
import { PassThrough } from 'node:stream';
import { DiscoveryV1Api, Exec, PortForward, type V1Pod } from '@kubernetes/client-node';
import { eventually } from '../helpers/kubernetes.js';
import { type RealNodeBed, realNodeUnavailable, startRealNodeBed } from '../helpers/real-node.js';
import { hostBefore, kubeletCgroups, mountsUnder, nodeChains, nodeProcesses, podNetworkDevices, readNodeState, SYSCTLS, readSysctl } from '../../testbed/node-cleanup.js';
import { BRIDGE, GATEWAY, KUBERNETES_SERVICE_IP, nodePaths, TEST_IMAGE } from '../../testbed/node-config.js';
import { NODE_NAME, ready } from '../../testbed/real-node.js';

const unavailable = realNodeUnavailable();

/** Pids (but this one) whose command line mentions `text`. */
function pidsMentioning(text: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid).filter((entry) => {
    try { return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text); } catch { return false; }
  }).map(Number);
}
const NS = 'real-node';

function pod(name: string, args: string[], restartPolicy: 'Never' | 'Always' = 'Never'): V1Pod {
  return {
    metadata: { name, namespace: NS, labels: { app: name } },
    spec: {
      restartPolicy,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: TEST_IMAGE, imagePullPolicy: 'IfNotPresent', args }],
    },
  };
}

t.test('a real node runs pods in containers on their own network', { skip: unavailable }, async (t) => {
  const before = hostBefore();
  const bed: RealNodeBed = await startRealNodeBed(t);
  const { core, kc, node } = bed;
  const paths = nodePaths(node.dir);
  const state = readNodeState(paths)!;

  const registered = await core.readNode({ name: NODE_NAME });
  t.ok(ready(registered), 'the node is Ready');
  t.equal(registered.status?.nodeInfo?.containerRuntimeVersion, 'containerd://2.4.2', 'its runtime is containerd 2.4.2');
  t.equal(registered.status?.nodeInfo?.kubeletVersion, 'v1.36.3', 'its kubelet is of the control plane\'s version');
  t.ok(registered.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === node.ip), 'it registered its InternalIP');

  await core.createNamespace({ body: { metadata: { name: NS } } });
  // The serviceaccount controller makes "default"; ServiceAccount admission needs it.
  await eventually(() => core.readNamespacedServiceAccount({ name: 'default', namespace: NS }), () => true, { what: 'the default ServiceAccount', timeoutMs: 60_000 });

  t.test('a pod runs to Succeeded in a container and its log comes back through the apiserver', async (t) => {
    await core.createNamespacedPod({ namespace: NS, body: pod('hello', ['print', 'hello from a container']) });
    const done = await eventually(() => core.readNamespacedPod({ name: 'hello', namespace: NS }),
      (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', { what: 'pod hello to end', timeoutMs: 120_000 });
    t.equal(done.status?.phase, 'Succeeded');
    t.equal(done.spec?.nodeName, NODE_NAME, 'scheduled on the real node');
    t.match(done.status?.containerStatuses?.[0].containerID, /^containerd:\/\/[0-9a-f]{64}$/, 'a containerd container');
    t.ok(done.spec?.volumes?.some((v) => v.projected?.sources?.some((s) => s.serviceAccountToken)), 'its service account token was mounted (kube-root-ca.crt published)');
    t.equal(await core.readNamespacedPodLog({ name: 'hello', namespace: NS }), 'hello from a container\n', 'the log');
  });

  t.test('a second pod reaches the first over the pod network and by its DNS name; exec and port-forward work', async (t) => {
    const serverPod = pod('server', ['serve', '8080'], 'Always');
    // Ready once the kubelet's probe (from the host, over the bridge) got an answer.
    serverPod.spec!.containers[0].readinessProbe = { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 };
    await core.createNamespacedPod({ namespace: NS, body: serverPod });
    const server = await eventually(() => core.readNamespacedPod({ name: 'server', namespace: NS }),
      (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false, { what: 'pod server Ready', timeoutMs: 120_000 });
    const ip = server.status!.podIP!;
    t.match(ip, /^10\.244\.0\.\d+$/, 'an address of the pod network');
    t.not(ip, node.ip, 'not the host\'s');

    // The endpointslice controller lists the pod behind a headless Service (as Spark's
    // driver Service is), and cluster DNS answers its name with the pod's address.
    await core.createNamespacedService({ namespace: NS, body: { metadata: { name: 'server' }, spec: { clusterIP: 'None', selector: { app: 'server' }, ports: [{ port: 8080 }] } } });
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    await eventually(() => discovery.listNamespacedEndpointSlice({ namespace: NS, labelSelector: 'kubernetes.io/service-name=server' }),
      (l) => l.items.some((s) => s.endpoints?.some((e) => e.addresses.includes(ip))), { what: 'an EndpointSlice with the server pod', timeoutMs: 60_000 });

    const resolver = new Resolver({ timeout: 2_000, tries: 1 });
    resolver.setServers([GATEWAY]);
    await eventually(() => resolver.resolve4(`server.${NS}.svc.cluster.local`), (ips) => ips.includes(ip), { what: 'cluster DNS to answer for the Service', timeoutMs: 60_000 });

    // exec: a command in the running container, its output back over the apiserver's stream.
    const out = new PassThrough();
    let output = '';
    out.on('data', (d) => { output += d; });
    const status = await new Promise<string>((ok, fail) => {
      new Exec(kc).exec(NS, 'server', 'main', ['/testbox', 'hostname'], out, null, null, false, (s) => ok(s.status ?? 'none')).catch(fail);
    });
    t.equal(status, 'Success', 'exec ended well');
    t.equal(output, 'server\n', 'exec ran in the pod (its hostname)');

    // Another pod fetches from the first by its pod IP.
    await core.createNamespacedPod({ namespace: NS, body: pod('client', ['get', `http://${ip}:8080/`]) });
    const fetched = await eventually(() => core.readNamespacedPod({ name: 'client', namespace: NS }),
      (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', { what: 'pod client to end', timeoutMs: 120_000 });
    const log = await core.readNamespacedPodLog({ name: 'client', namespace: NS });
    t.equal(fetched.status?.phase, 'Succeeded', `the client pod got an answer (${log.trim()})`);
    t.equal(log, 'server\n', 'from the server pod');

    // And by the Service's name, through cluster DNS (the pod's resolv.conf names it).
    await core.createNamespacedPod({ namespace: NS, body: pod('client-dns', ['get', `http://server.${NS}.svc.cluster.local:8080/`]) });
    const byName = await eventually(() => core.readNamespacedPod({ name: 'client-dns', namespace: NS }),
      (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', { what: 'pod client-dns to end', timeoutMs: 120_000 });
    const byNameLog = await core.readNamespacedPodLog({ name: 'client-dns', namespace: NS });
    t.equal(byName.status?.phase, 'Succeeded', `a pod reached it by its Service's DNS name (${byNameLog.trim()})`);
    t.equal(byNameLog, 'server\n', 'the same server');

    // port-forward: a local port whose connections go to the pod's port 8080.
    const forward = new PortForward(kc);
    const sockets: Socket[] = [];
    const listener = createServer((socket) => {
      sockets.push(socket);
      forward.portForward(NS, 'server', [8080], socket, null, socket).catch((error: Error) => socket.destroy(error));
    });
    await new Promise<void>((ok) => listener.listen(0, '127.0.0.1', ok));
    t.teardown(() => { for (const s of sockets) s.destroy(); listener.close(); });
    const { port } = listener.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(30_000) });
    t.equal(await res.text(), 'server\n', 'port-forward reached the pod');
  });

  t.test('a pod reaches a ClusterIP Service and the apiserver through the "kubernetes" Service (kube-proxy)', async (t) => {
    // The kubelet signed in as itself (the Node authorizer let it register and run pods), not as the admin.
    t.ok(readFileSync(`/proc/${state.pids.kubelet}/cmdline`, 'utf8').split('\0').includes(join(bed.dir, 'testbed', 'node.kubeconfig')), 'the kubelet runs with its own kubeconfig');
    t.match(readFileSync(join(bed.dir, 'testbed', 'node.kubeconfig'), 'utf8'), /user: system:node:testbed-node/, 'whose user is system:node:testbed-node');

    // The "server" pod of the test above, now behind a ClusterIP on port 80.
    const svc = await core.createNamespacedService({ namespace: NS, body: { metadata: { name: 'server-ip' }, spec: { selector: { app: 'server' }, ports: [{ port: 80, targetPort: 8080 }] } } });
    t.match(svc.spec?.clusterIP, /^10\.0\.0\.\d+$/, 'a ClusterIP of the service range');
    // Readiness, not time: kube-proxy has written the Service's endpoint rule (a KUBE-SEP chain
    // naming it); before that the ClusterIP refuses connections.
    const { execFileSync } = await import('node:child_process');
    await eventually(async () => execFileSync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' }),
      (rules) => rules.split('\n').some((line) => line.startsWith('-A KUBE-SEP-') && line.includes(`${NS}/server-ip`)),
      { what: "kube-proxy's endpoint rule for the Service", timeoutMs: 120_000 });
    const viaService = async (name: string, args: string[]) => {
      await core.createNamespacedPod({ namespace: NS, body: pod(name, args) });
      const done = await eventually(() => core.readNamespacedPod({ name, namespace: NS }),
        (p) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed', { what: `pod ${name} to end`, timeoutMs: 120_000 });
      return { phase: done.status?.phase, log: await core.readNamespacedPodLog({ name, namespace: NS }) };
    };
    const byIp = await viaService('client-cluster-ip', ['get', `http://${svc.spec!.clusterIP}/`]);
    t.same(byIp, { phase: 'Succeeded', log: 'server\n' }, 'a pod reached the server pod through the ClusterIP');
    const byName = await viaService('client-svc-name', ['get', `http://server-ip.${NS}.svc.cluster.local/`]);
    t.same(byName, { phase: 'Succeeded', log: 'server\n' }, 'and through the Service\'s name');

    // The apiserver's own Service points at this machine's address (advertised), and a pod
    // reaches it at kubernetes.default.svc with its service account, as Spark's driver does.
    const kubernetes = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    t.equal(kubernetes.spec?.clusterIP, KUBERNETES_SERVICE_IP, 'the kubernetes Service');
    await eventually(() => kc.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({ namespace: 'default', labelSelector: 'kubernetes.io/service-name=kubernetes' }),
      (l) => l.items.some((s) => s.endpoints?.some((e) => e.addresses.includes(node.ip))), { what: 'the kubernetes Service\'s endpoint at the node\'s address', timeoutMs: 60_000 });
    const me = await viaService('whoami', ['whoami']);
    t.same(me, { phase: 'Succeeded', log: `system:serviceaccount:${NS}:default\n` }, 'the apiserver knew the pod by its service account');
    t.ok(nodeChains().some((chain) => chain.endsWith(' nat KUBE-SERVICES')), 'kube-proxy\'s rules are in place (removed below)');
  });

  t.test('stopping the node leaves nothing behind', async (t) => {
    const devices = podNetworkDevices();
    t.ok(devices.includes(BRIDGE), 'the pod bridge existed while pods ran');
    t.ok(mountsUnder([paths.dir]).length > 0, 'so did mounts under the node dir');
    await node.stop();
    t.same(nodeProcesses(paths, state), [], 'no process of the node: daemons, shims, containers');
    t.same(pidsMentioning(paths.dir), [], 'no process naming the node dir');
    t.same(mountsUnder([paths.dir, '/var/lib/kubelet', '/run/containerd']), [], 'no mounts');
    t.same(podNetworkDevices(), [], 'no bridge, no veth');
    t.same(nodeChains(), [], 'no KUBE-* or CNI-* iptables chain');
    t.same(Object.fromEntries(SYSCTLS.map((name) => [name, readSysctl(name)])), before.sysctls, 'sysctls as they were');
    t.same(before.created.filter((path) => existsSync(path)), [], 'no host path or cgroup the node created');
    t.ok(kubeletCgroups().every((cgroup) => !before.created.includes(cgroup) || !existsSync(cgroup)), 'no kubepods cgroup');
    t.notOk(existsSync(paths.state), 'its state file is gone');
  });
});
