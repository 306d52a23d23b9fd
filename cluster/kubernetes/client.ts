// The apiserver client module (issue 28): the one place the Kubernetes client is built, from a
// kubeconfig file or in-cluster config. Its parts: apiserver.ts (agents, credentials, TLS, the
// kubeconfig's proxy-url, for every call), json-call.ts and log-request.ts (plain requests for
// the hot writes and log streams), call-timeout.ts (a deadline per call) and errors.ts (the
// apiserver's answers as our errors). client-node's generated APIs, watches and informers run
// on the same connection (ServiceKubeConfig).
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { connectionOf, ServiceKubeConfig } from './apiserver.js';

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

export function kubeClients(kubeconfig?: string): KubeClients {
  const kc = new ServiceKubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  // Built now, so that a kubeconfig it cannot serve (no server, a socks proxy) stops the start.
  connectionOf(kc);
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    server: kc.getCurrentCluster()?.server ?? 'the Kubernetes API server',
  };
}
