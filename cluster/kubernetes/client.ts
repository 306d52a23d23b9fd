// The one place the Kubernetes client is built: a kubeconfig file or in-cluster config.
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

export const GROUP = 'submission-service.io';
export const VERSION = 'v1';
export const TEMPLATES = 'configtemplates';
export const APPLICATIONS = 'applications';

export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  server: string;
}

export function kubeClients(kubeconfig?: string): KubeClients {
  const kc = new KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  return {
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    server: kc.getCurrentCluster()?.server ?? 'the Kubernetes API server',
  };
}
