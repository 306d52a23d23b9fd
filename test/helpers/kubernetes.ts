// A real control plane for a test, in this process's care: the test bed (etcd,
// kube-apiserver, optionally kube-scheduler; built by test/cluster/build.sh) in a temp dir,
// then what `testbed serve` puts on it (namespace, CRDs, fake nodes on request, the webhook
// service registered with its CA) and the API in Kubernetes mode on a real port.
// Everything started here is stopped in the test's teardown.
import { join } from 'node:path';
import { AdmissionregistrationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1MutatingWebhookConfiguration, type V1Pod } from '@kubernetes/client-node';
import type { FastifyInstance } from 'fastify';
import { createFakeNodes, ensureCrds, ensureNamespace } from '../../cluster/kubernetes/bootstrap.js';
import { APPLICATIONS, GROUP, type KubeClients, kubeClients, TEMPLATES, VERSION } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster, type KubernetesClusterOptions } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { buildApi } from '../../submit-api/app.js';
import { type AdmissionRules, buildRules, type RulesOptions, type RulesSource } from '../../domain/index.js';
import { mutatingWebhookConfiguration } from '../../webhook/server/registration.js';
import { startWebhookService } from '../../cli/webhook-service.js';
import { freePort } from '../../lib/free-port.js';
import { type ApiIdentity, ensureApiIdentity } from '../../testbed/api-identity.js';
import { startTestbed, type Testbed, testbedBinary } from '../../testbed/control-plane.js';
import { exampleCluster } from './api.js';
import { sleep, tempDir } from './temp.js';

interface TestLike { teardown(fn: () => unknown): void }

export const WEBHOOK_NAME = 'submission-service';

// The test bed's process is started by testbed/control-plane.ts (one starter for `testbed up`,
// the tests and the benches); these names stay here for the tests that import them.
export { freePort, startTestbed, type Testbed, testbedBinary };

export type Reply = { status: number; json: any; body: string; ms: number };

/** A JSON call over real HTTP; `timeoutMs` bounds how long an answer may take. */
export async function httpCall(baseUrl: string, method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Reply> {
  const started = performance.now();
  const res = await fetch(baseUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json: unknown;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status: res.status, json, body: text, ms: performance.now() - started };
}

export interface ApiInstance {
  app: FastifyInstance;
  cluster: KubernetesCluster;
  kubeClients: KubeClients;
  baseUrl: string;
  close(): Promise<void>;
}

/** One more API (its own clients and KubernetesCluster) against the same apiserver. */
export async function startApi(kubeconfig: string, namespace: string, options: Partial<KubernetesClusterOptions> = {}): Promise<ApiInstance> {
  const clients = kubeClients(kubeconfig);
  const cluster = new KubernetesCluster({ clients, namespace, ...options });
  await cluster.start();
  const app = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } } });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, cluster, kubeClients: clients, baseUrl, close: async () => { await app.close(); await cluster.close(); } };
}

export interface KubeBed {
  dir: string;
  namespace: string;
  rules: AdmissionRules;
  /** The current test bed (see `restartTestbed`). */
  testbed: Testbed;
  /**
   * Stops the test bed (SIGTERM, or `signal`; nothing if it is already gone) and starts it
   * again with `--keep` on the same dir and apiserver port: the same cluster, as a restarted
   * apiserver is (same CA and certificates, etcd restarted on its data), so everything in it
   * is still there. Nothing is swapped or put back: clients in use must reconnect by themselves.
   */
  restartTestbed(signal?: NodeJS.Signals): Promise<void>;
  /** Clients of this process (the API's own are separate: see `api.cluster`). */
  clients: KubeClients;
  /** With `apiIdentity`: the API's kubeconfig and username. */
  apiIdentity?: ApiIdentity;
  /** Every review the webhook answered: the pod's application and the outcome. */
  reviews: { appName?: string; outcome: string }[];
  webhook: Awaited<ReturnType<typeof startWebhookService>>;
  api: ApiInstance;
  call(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<Reply>;
  /** The MutatingWebhookConfiguration as the webhook service registers it. */
  registration(): V1MutatingWebhookConfiguration;
  /** Pods of our namespace matching a label selector. */
  pods(labelSelector?: string): Promise<V1Pod[]>;
  /** Application custom resources of our namespace. */
  applications(): Promise<{ metadata: { name: string }; spec: any; status?: any }[]>;
  template(name: string): Promise<{ spec: { config: any } } | undefined>;
}

export interface KubeBedOptions {
  scheduler?: boolean;
  /** Fake Node objects for each pool of the example cluster (a test double: no kubelet). */
  nodes?: boolean;
  namespace?: string;
  /** More admission rules for the webhook (event logs, the log archive's finalizer). */
  rules?: Partial<RulesOptions>;
  /** The API writes with its own service account (as in the chart), whose admitted pods skip the webhook; default: the admin's certificate. */
  apiIdentity?: boolean;
  /** Each enforcement point's own copy of the rules (cli/watched-rules.ts), as two processes hold them; default: both the rules above. */
  ruleSources?: { webhook: RulesSource; api: RulesSource };
  /** More options of the API's cluster (the gateway's shared secret). */
  api?: Partial<KubernetesClusterOptions>;
}

/** Namespace, CRDs and (on request) fake nodes: what `testbed serve` puts into a fresh cluster. */
export async function bootstrap(clients: KubeClients, rules: AdmissionRules, nodes: boolean): Promise<void> {
  await ensureNamespace(clients, rules.namespace);
  await ensureCrds(clients);
  if (nodes) await createFakeNodes(clients, rules);
}

/** Registers (or re-registers) the webhook configuration, as the webhook service does at start. */
export async function register(clients: KubeClients, body: V1MutatingWebhookConfiguration): Promise<void> {
  const api = clients.kc.makeApiClient(AdmissionregistrationV1Api);
  await api.deleteMutatingWebhookConfiguration({ name: body.metadata!.name! }).catch(() => undefined);
  await api.createMutatingWebhookConfiguration({ body });
}

export async function startKubeBed(t: TestLike, options: KubeBedOptions = {}): Promise<KubeBed> {
  const dir = tempDir(t, 'subsvc-kube-');
  const namespace = options.namespace ?? 'spark-apps';
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace, ...options.rules });
  let testbed = await startTestbed(join(dir, 'testbed'), { scheduler: options.scheduler });
  // Registered after tempDir's teardown, so it runs before the directory goes.
  const stops: (() => Promise<unknown>)[] = [() => testbed.stop()];
  t.teardown(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });
  const clients = kubeClients(testbed.kubeconfig);
  await bootstrap(clients, rules, options.nodes ?? false);
  const reviews: KubeBed['reviews'] = [];
  const identity = options.apiIdentity ? await ensureApiIdentity(clients, namespace, join(dir, 'testbed')) : undefined;
  const apiUser = identity?.user;
  const webhookPort = await freePort();
  const url = `https://127.0.0.1:${webhookPort}/mutate-pods`;
  const webhook = await startWebhookService({
    clients, rules: options.ruleSources?.webhook ?? rules, certDir: join(dir, 'certs'), port: webhookPort, host: '127.0.0.1',
    dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
    registration: { name: WEBHOOK_NAME, url, apiUser },
    onReview: (result) => reviews.push({ appName: result.appName, outcome: result.outcome }),
  });
  stops.push(() => webhook.close());
  const api = await startApi(identity?.kubeconfig ?? testbed.kubeconfig, namespace, { ...options.api, rules: options.ruleSources?.api ?? rules });
  stops.push(() => api.close());
  const where = { group: GROUP, version: VERSION, namespace };
  const registration = () => mutatingWebhookConfiguration({ name: WEBHOOK_NAME, url, caBundle: webhook.caBundle, namespaces: [namespace], apiUser }) as V1MutatingWebhookConfiguration;
  const bed: KubeBed = {
    dir, namespace, rules, testbed, clients, webhook, api, registration, apiIdentity: identity, reviews,
    async restartTestbed(signal) {
      await testbed.stop(signal);
      testbed = await startTestbed(join(dir, 'testbed'), { scheduler: options.scheduler, port: testbed.port, keep: true });
      bed.testbed = testbed;
    },
    call: (method, path, body, timeoutMs) => httpCall(api.baseUrl, method, path, body, timeoutMs),
    pods: async (labelSelector) => (await clients.core.listNamespacedPod({ namespace, labelSelector })).items,
    applications: async () => (await clients.custom.listNamespacedCustomObject({ ...where, plural: APPLICATIONS }) as { items: any[] }).items,
    template: async (name) => {
      try {
        return await clients.custom.getNamespacedCustomObject({ ...where, plural: TEMPLATES, name }) as { spec: { config: any } };
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
  };
  return bed;
}

/**
 * Clients acting as the existing service account `name` in `namespace` (a TokenRequest token,
 * the bed's server and CA): what that identity's RBAC allows, nothing more. `boundTo`: the pod
 * the token is bound to, as a kubelet's projected token is (the apiserver then names the pod in
 * the request's user info, `authentication.kubernetes.io/pod-name`).
 */
export async function clientsAs(admin: KubeClients, namespace: string, name: string, boundTo?: { name: string; uid: string }): Promise<KubeClients> {
  const boundObjectRef = boundTo ? { apiVersion: 'v1', kind: 'Pod', ...boundTo } : undefined;
  const token = await admin.core.createNamespacedServiceAccountToken({ name, namespace, body: { spec: { audiences: [], boundObjectRef } } });
  return clientsWithToken(admin, token.status!.token);
}

/** Clients of admin's cluster that send `token` (one read from a pod, say). */
export function clientsWithToken(admin: KubeClients, token: string): KubeClients {
  const cluster = admin.kc.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'bed', server: cluster.server, caData: cluster.caData, skipTLSVerify: false }],
    users: [{ name: 'token', token }],
    contexts: [{ name: 'token', cluster: 'bed', user: 'token' }],
    currentContext: 'token',
  });
  return { kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), server: cluster.server };
}

/** How long and how often `eventually` reads, what it waits for, and what its timeout says. */
export interface EventuallyOptions<T> {
  timeoutMs?: number;
  intervalMs?: number;
  what?: string;
  /**
   * Where things stand when the wait times out, said in place of the last value: a caller that
   * knows more than the value it polled (a pod's events, the service's log) says it here.
   */
  describe?: (last: T | undefined) => string | Promise<string>;
}

/** Waits until `read` gives a value `ok` accepts; fails with the last value seen (or `describe`'s account). */
export async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, options: EventuallyOptions<T> = {}): Promise<T> {
  const { timeoutMs = 60_000, intervalMs = 100, what = 'condition', describe } = options;
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      last = await read();
      if (ok(last)) return last;
    } catch (error) { lastError = error; }
    await sleep(intervalMs);
  }
  const state = describe ? await describe(last) : `last: ${JSON.stringify(last)?.slice(0, 500) ?? String(lastError)}`;
  throw new Error(`timed out waiting for ${what}; ${state}`);
}

/**
 * TEST DOUBLE for the kubelet, which the test bed does not run: writes a driver pod's
 * status as a kubelet would when its container runs or ends.
 */
export async function fakeKubelet(clients: KubeClients, namespace: string, name: string, phase: 'Running' | 'Succeeded' | 'Failed', exitCode = 0): Promise<V1Pod> {
  const pod = await clients.core.readNamespacedPod({ name, namespace });
  const container = pod.spec!.containers[0];
  const now = new Date();
  const startedAt = pod.status?.startTime ? new Date(pod.status.startTime) : now;
  const state = phase === 'Running'
    ? { running: { startedAt } }
    : { terminated: { exitCode: phase === 'Succeeded' ? 0 : exitCode || 1, reason: phase === 'Succeeded' ? 'Completed' : 'Error', startedAt, finishedAt: now } };
  pod.status = {
    ...pod.status,
    phase,
    startTime: startedAt,
    conditions: [{ type: 'Ready', status: phase === 'Running' ? 'True' : 'False', lastTransitionTime: now }],
    containerStatuses: [{
      name: container.name, image: container.image ?? '', imageID: `fake-kubelet://${container.image}`,
      ready: phase === 'Running', restartCount: 0, started: phase === 'Running', state,
    }],
  };
  return clients.core.replaceNamespacedPodStatus({ name, namespace, body: pod });
}

/**
 * TEST DOUBLE for the kubelet, for deletion: a pod bound to a node stays Terminating until
 * its kubelet confirms that its containers are gone; this confirms it (grace period 0).
 */
export async function fakeKubeletFinishDeletion(clients: KubeClients, namespace: string, name: string): Promise<void> {
  await clients.core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch((e) => { if (e.code !== 404) throw e; });
}

/** A pod shaped as Spark writes an executor of the given driver pod. */
export function sparkExecutorPod(driver: V1Pod, index: number, namespace: string): V1Pod {
  const appName = driver.metadata!.name!;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${appName}-exec-${index}`,
      namespace,
      labels: {
        'spark-role': 'executor',
        'spark-app-selector': `spark-${appName.replace(/[^a-z0-9]/g, '').slice(-24)}`,
        'spark-exec-id': String(index),
        'submission-service/app-name': appName,
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: appName, uid: driver.metadata!.uid!, controller: true }],
    },
    spec: {
      restartPolicy: 'Never',
      containers: [{
        name: 'spark-kubernetes-executor',
        image: driver.spec!.containers[0].image ?? 'apache/spark:3.5.7',
        args: ['executor'],
        // What Spark itself would request before admission resizes it.
        resources: { requests: { cpu: '1', memory: '1408Mi' }, limits: { memory: '1408Mi' } },
      }],
    },
  };
}
