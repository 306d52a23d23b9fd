// The one place the Kubernetes client is built: a kubeconfig file or in-cluster config.
import { Agent, type AgentOptions } from 'node:https';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

export const GROUP = 'submission-service.io';
export const VERSION = 'v1';
export const TEMPLATES = 'configtemplates';
export const APPLICATIONS = 'applications';
export const SCHEDULES = 'schedules';
export const JOB_PROFILES = 'jobprofiles';
/** Names our writes in managedFields (client-node would say node-fetch). */
export const FIELD_MANAGER = 'submission-service';

export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  server: string;
}

/**
 * client-node builds a new https.Agent, hence a full TLS handshake, for every request
 * (8 ms against 2.8 ms on a kept-alive connection here). One agent per KubeConfig (its TLS
 * material is the same for every call; tokens travel as headers), so that TLS sessions
 * are resumed. Not keep-alive: node-fetch 2 (client-node's) takes a reused socket's next
 * request for a cut chunked response and fails a complete one with "Premature close"
 * (node-fetch issue 1767). Over loopback that never showed; against an apiserver across a
 * network (a pod through its Service, on the real node) every second read of a response
 * over 2 KB failed, and the webhook could not read its MutatingWebhookConfiguration.
 * createAgent is client-node's own method: pinned by test/unit/library-pins.test.ts.
 */
function sharedAgent(kc: KubeConfig): void {
  const patched = kc as unknown as { createAgent: (cluster: { server?: string }, options: AgentOptions) => unknown };
  const original = patched.createAgent.bind(kc);
  let agent: Agent | undefined;
  patched.createAgent = (cluster, options) => {
    if (!cluster?.server?.startsWith('https:')) return original(cluster, options);
    agent ??= new Agent({ ...options, keepAlive: false, maxSockets: 128 });
    return agent;
  };
}

export function kubeClients(kubeconfig?: string): KubeClients {
  const kc = new KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  sharedAgent(kc);
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    server: kc.getCurrentCluster()?.server ?? 'the Kubernetes API server',
  };
}
