// FakeKubelet — a TEST DOUBLE for a kubelet, for the test bed's fake Nodes and `testbed up
// --run-pods`, where many pods are wanted and no containers (`--real-node` runs a real
// kubelet: real-node.ts). It plays one node agent for our driver pods: it
// runs each admitted driver pod the way local mode does (the pod's own spark-submit
// arguments, master local[N]), reports pod status to the apiserver, honours deletion,
// and serves /containerLogs so that `kubectl logs` (and our API's log) work through the
// real apiserver. Executors are not created: master local[N] runs tasks in the driver.
// Secret volumes (secret-volumes.ts): the Secret is read from the apiserver as a kubelet reads
// it and written into a per-pod directory; the process, which shares this machine's file
// system, is told that directory wherever its env names a path under the mount.
import { createServer, type Server } from 'node:https';
import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { generateCa, issueServingCert } from '../certs/generate.js';
import { LABEL_JOB, readConfig, SPARK_ROLE } from '../domain/index.js';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import { type ResilientInformer, resilientInformer } from '../cluster/kubernetes/informers.js';
import { unlessExists } from '../cluster/kubernetes/errors.js';
import { logStream } from '../cluster/local/log-stream.js';
import { isAlive, killGroup, readExitCode, startDriverPod } from '../cluster/local/process-runner.js';
import { localCores } from '../cluster/local/spark-command.js';
import { LogTimes, withTimes } from './fake-kubelet-log-times.js';
import { materializeSecretVolumes, readWhenThere, removeSecretVolumes } from './secret-volumes.js';

export interface FakeKubeletOptions {
  clients: KubeClients;
  namespace: string;
  dataDir: string;
  sparkSubmit: string;
  python?: string;
  cores: number;
  /**
   * Test-double behaviour: images this fake kubelet is told cannot be pulled. A pod naming one
   * is never run; its container is reported waiting with ErrImagePull, then ImagePullBackOff,
   * as a kubelet reports an image that does not exist.
   */
  missingImages?: string[];
  /**
   * Jars on every driver's classpath (SPARK_DIST_CLASSPATH), as an image has them in
   * /opt/spark/jars: the S3A connector for event logs in object storage.
   */
  classPath?: string;
  log?: (message: string) => void;
}

interface Running {
  pid: number; startTicks: number; logFile: string; exitFile: string; startedAt: string; done: boolean;
  /** When each line was first seen (timestamps=true, sinceTime). */
  times: LogTimes;
  /** Log bytes served by /containerLogs so far (tailLines reads not counted). */
  served: number;
}

export class FakeKubelet {
  readonly nodeName = 'fake-kubelet';
  private server?: Server;
  private informer?: ResilientInformer<V1Pod>;
  private readonly running = new Map<string, Running>();
  private readonly logResponses = new Set<import('node:http').ServerResponse>();
  /** Pods whose volumes are being prepared: an update event meanwhile must not start them twice. */
  private readonly preparing = new Set<string>();
  port = 0;

  constructor(private readonly options: FakeKubeletOptions) {
    mkdirSync(join(options.dataDir, 'logs'), { recursive: true });
  }

  async start(): Promise<void> {
    const ca = await generateCa({ commonName: 'fake-kubelet-ca' });
    const tls = await issueServingCert({ ca, ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'] });
    this.server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => void this.serveLog(req.url ?? '', res));
    await new Promise<void>((ok) => this.server!.listen(0, '127.0.0.1', ok));
    this.port = (this.server.address() as { port: number }).port;
    await this.registerNode();
    // An informer, so a dropped watch comes back (relisting what changed meanwhile).
    const { core } = this.options.clients;
    const ns = this.options.namespace;
    const selector = `${LABEL_JOB},${SPARK_ROLE}=driver`;
    this.informer = resilientInformer<V1Pod>(this.options.clients.kc, 'fake-kubelet pods', `/api/v1/namespaces/${ns}/pods`,
      () => core.listNamespacedPod({ namespace: ns, labelSelector: selector }), { labelSelector: selector, log: this.options.log });
    const handle = (pod: V1Pod) => void this.onPod(pod).catch((error: unknown) => this.options.log?.(`fake kubelet: pod ${pod.metadata?.name}: ${String(error)}`));
    this.informer.informer.on('add', handle);
    this.informer.informer.on('update', handle);
    await this.informer.start();
  }

  async stop(): Promise<void> {
    await this.informer?.stop();
    for (const run of this.running.values()) if (!run.done) await killGroup(run.pid, run.startTicks, 2000);
    await new Promise<void>((ok) => (this.server ? this.server.close(() => ok()) : ok()));
  }

  /** The node that pods without a scheduler are bound to; the apiserver reaches its logs here. */
  private async registerNode(): Promise<void> {
    const { core } = this.options.clients;
    const body = { metadata: { name: this.nodeName, labels: { 'submission-service/test-double': 'fake-kubelet' } } };
    await core.createNode({ body }).catch(unlessExists);
    const status = {
      allocatable: { cpu: '1000', memory: '10000Gi', pods: '1000' },
      capacity: { cpu: '1000', memory: '10000Gi', pods: '1000' },
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: this.port } },
      conditions: [{ type: 'Ready', status: 'True', reason: 'FakeKubelet', message: 'a test double runs pods as local processes' }],
    };
    // A taint keeps the real scheduler (when it runs) from choosing this node for sized pods.
    const node = await core.readNode({ name: this.nodeName });
    await core.replaceNode({ name: this.nodeName, body: { ...node, spec: { taints: [{ key: 'submission-service/fake-kubelet', effect: 'NoSchedule' }] } } });
    await core.replaceNodeStatus({ name: this.nodeName, body: { ...(await core.readNode({ name: this.nodeName })), status } });
    // The pools' fake nodes (testbed up --nodes) are this kubelet's too: logs come here.
    const pools = await core.listNode({ labelSelector: 'submission-service/test-double=fake-node' });
    for (const poolNode of pools.items) {
      poolNode.status = { ...poolNode.status, addresses: status.addresses, daemonEndpoints: status.daemonEndpoints };
      await core.replaceNodeStatus({ name: poolNode.metadata!.name!, body: poolNode });
    }
  }

  private async onPod(pod: V1Pod): Promise<void> {
    const name = pod.metadata!.name!;
    const run = this.running.get(name);
    if (pod.metadata?.deletionTimestamp) {
      if (run && !run.done) await killGroup(run.pid, run.startTicks, 2000);
      removeSecretVolumes(this.volumesDir(name));
      await this.options.clients.core.deleteNamespacedPod({ name, namespace: this.options.namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
      return;
    }
    if (run || this.preparing.has(name) || pod.status?.phase !== 'Pending') return;
    if (!pod.spec?.nodeName) {
      await this.options.clients.core.createNamespacedPodBinding({
        name, namespace: this.options.namespace,
        body: { metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName } },
      });
      return; // the binding's update event starts it
    }
    const image = pod.spec?.containers?.[0]?.image ?? '';
    if (this.options.missingImages?.includes(image)) {
      await this.cannotPull(pod, image);
      return;
    }
    this.preparing.add(name);
    try {
      // As a kubelet: a Secret that does not exist (yet) keeps the pod from starting; tried again.
      const prepared = await materializeSecretVolumes(pod, this.volumesDir(name), (secret) =>
        this.options.clients.core.readNamespacedSecret({ name: secret, namespace: this.options.namespace }));
      this.launch(await this.withSecretEnv(prepared));
    } finally {
      this.preparing.delete(name);
    }
  }

  private volumesDir(pod: string): string {
    return join(this.options.dataDir, 'volumes', pod);
  }

  /** The pod with its secretKeyRef variables resolved, as a kubelet gives them to the container. */
  private async withSecretEnv(pod: V1Pod): Promise<V1Pod> {
    const [container, ...others] = pod.spec!.containers;
    const env = [];
    for (const variable of container?.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (!ref) { env.push(variable); continue; }
      // As a kubelet: the container waits for a Secret that does not exist yet (CreateContainerConfigError, tried again).
      const secret = await readWhenThere((name) => this.options.clients.core.readNamespacedSecret({ name, namespace: this.options.namespace }), ref.name!, ref.optional === true).catch(() => undefined);
      const data = secret?.data?.[ref.key];
      if (data === undefined && !ref.optional) throw new Error(`secret ${ref.name} has no key ${ref.key}`);
      if (data !== undefined) env.push({ name: variable.name, value: Buffer.from(data, 'base64').toString('utf8') });
    }
    if (this.options.classPath) env.push({ name: 'SPARK_DIST_CLASSPATH', value: this.options.classPath });
    return { ...pod, spec: { ...pod.spec!, containers: [{ ...container!, env }, ...others] } };
  }

  /** Test-double behaviour: the kubelet's report for an image it cannot pull (first ErrImagePull, then the back-off). */
  private async cannotPull(pod: V1Pod, image: string): Promise<void> {
    const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting?.reason;
    if (waiting === 'ImagePullBackOff') return;
    const reason = waiting === 'ErrImagePull' ? 'ImagePullBackOff' : 'ErrImagePull';
    const message = reason === 'ErrImagePull'
      ? `failed to pull image "${image}": not found (fake kubelet: told this image is missing)`
      : `Back-off pulling image "${image}"`;
    const { core } = this.options.clients;
    const name = pod.metadata!.name!;
    const current = await core.readNamespacedPod({ name, namespace: this.options.namespace });
    const container = current.spec!.containers[0];
    current.status = {
      ...current.status,
      phase: 'Pending',
      containerStatuses: [{ name: container.name, image, imageID: '', ready: false, restartCount: 0, state: { waiting: { reason, message } } }],
    };
    await core.replaceNamespacedPodStatus({ name, namespace: this.options.namespace, body: current });
  }

  private launch(pod: V1Pod): void {
    const name = pod.metadata!.name!;
    const logFile = join(this.options.dataDir, 'logs', `${name}.log`);
    const exitFile = join(this.options.dataDir, 'logs', `${name}.exit`);
    const machine = { sparkSubmit: this.options.sparkSubmit, python: this.options.python, workDir: join(this.options.dataDir, 'work', name) };
    const started = startDriverPod(pod, machine, localCores(readConfig(pod), this.options.cores), { logFile, exitFile });
    const run: Running = { ...started, logFile, exitFile, startedAt: new Date().toISOString(), done: false, times: new LogTimes(logFile), served: 0 };
    this.running.set(name, run);
    void this.report(pod, { phase: 'Running', running: { startedAt: run.startedAt } });
    void started.exited.then(async () => {
      await run.times.stop();
      run.done = true;
      const code = readExitCode(exitFile) ?? 137;
      await this.report(pod, {
        phase: code === 0 ? 'Succeeded' : 'Failed',
        terminated: { exitCode: code, reason: code === 0 ? 'Completed' : 'Error', startedAt: run.startedAt, finishedAt: new Date().toISOString() },
      });
    });
  }

  private async report(pod: V1Pod, state: { phase: string; running?: { startedAt: string }; terminated?: { exitCode: number; reason: string; startedAt: string; finishedAt: string } }) {
    const { core } = this.options.clients;
    const name = pod.metadata!.name!;
    const current = await core.readNamespacedPod({ name, namespace: this.options.namespace }).catch(() => undefined);
    if (!current) return;
    const container = current.spec!.containers[0];
    current.status = {
      ...current.status,
      phase: state.phase,
      startTime: current.status?.startTime ?? new Date(state.running?.startedAt ?? state.terminated!.startedAt),
      podIP: '127.0.0.1',
      containerStatuses: [{
        name: container.name, image: container.image ?? '', imageID: '', ready: state.phase === 'Running', restartCount: 0,
        state: state.running
          ? { running: { startedAt: new Date(state.running.startedAt) } }
          : { terminated: { ...state.terminated!, startedAt: new Date(state.terminated!.startedAt), finishedAt: new Date(state.terminated!.finishedAt) } },
      }],
    };
    await core.replaceNamespacedPodStatus({ name, namespace: this.options.namespace, body: current }).catch(() => undefined);
  }

  /** GET /containerLogs/{namespace}/{pod}/{container}?follow=true, as the apiserver asks a kubelet. */
  private async serveLog(url: string, res: import('node:http').ServerResponse): Promise<void> {
    const parsed = new URL(url, 'https://127.0.0.1');
    const [, kind, , pod] = parsed.pathname.split('/');
    const run = kind === 'containerLogs' ? this.running.get(pod ?? '') : undefined;
    if (!run) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such container on this fake kubelet\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    const tailLines = parsed.searchParams.get('tailLines');
    if (tailLines !== null) { res.end(await lastLines(run.logFile, Number(tailLines))); return; }
    const file = logStream({ file: run.logFile, follow: parsed.searchParams.get('follow') === 'true', ended: () => run.done || !isAlive(run.pid, run.startTicks) });
    const sinceTime = parsed.searchParams.get('sinceTime');
    const stream = Readable.from(withTimes(file, run.times, {
      timestamps: parsed.searchParams.get('timestamps') === 'true', sinceMs: sinceTime === null ? undefined : Date.parse(sinceTime), counted: (bytes) => { run.served += bytes; },
    }), { objectMode: false });
    stream.once('close', () => file.destroy());
    this.logResponses.add(res);
    res.once('close', () => { stream.destroy(); this.logResponses.delete(res); });
    stream.pipe(res);
  }

  /** Test-double behaviour: the bytes of a pod's log served by /containerLogs so far (tailLines reads not counted). */
  servedLogBytes(podName: string): number {
    return this.running.get(podName)?.served ?? 0;
  }

  /** Test-double behaviour: cuts every log stream being served (a kubelet or network failing mid-stream); the count cut. */
  dropLogStreams(): number {
    const open = [...this.logResponses];
    for (const res of open) res.destroy();
    return open.length;
  }
}

/** The last `count` lines of a log file (a last line without its newline counts), as `tailLines` asks. */
async function lastLines(file: string, count: number): Promise<Buffer> {
  const handle = await open(file, 'r').catch(() => undefined);
  if (!handle) return Buffer.alloc(0);
  try {
    const { size } = await handle.stat();
    const window = Math.min(size, 1024 * 1024); // enough for the few lines asked here
    const bytes = Buffer.alloc(window);
    await handle.read(bytes, 0, window, size - window);
    // Going back from the end (the last newline ends the last line): the newline before each line.
    let before = bytes.length - (bytes.at(-1) === 0x0a ? 1 : 0);
    for (let found = 0; found < count; found++) {
      before = before > 0 ? bytes.lastIndexOf(0x0a, before - 1) : -1;
      if (before < 0) return bytes;
    }
    return bytes.subarray(before + 1);
  } finally {
    await handle.close();
  }
}
