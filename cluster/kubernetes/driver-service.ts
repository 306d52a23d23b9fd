// The applications namespace's headless Service of all drivers, and the admission policy that
// keeps a name under it to the pod of that name (domain/driver-dns.ts says why; the
// chart's templates/driver-service.yaml writes the same objects). For a cluster where the
// chart is not installed (`testbed up --real-node`).
import type { V1Service } from '@kubernetes/client-node';
import { DRIVER_PORTS, SPARK_ROLE } from '../../domain/index.js';
import type { KubeClients } from './client.js';
import { unlessExists } from './errors.js';
import { ensureNamespacePolicy, namespaceBinding, type NamespacePolicy } from './namespace-policy.js';

export function driverService(namespace: string, name: string): V1Service {
  return {
    metadata: { name, namespace },
    spec: {
      clusterIP: 'None',
      // A driver has no readiness probe; executors dial it from its start.
      publishNotReadyAddresses: true,
      selector: { [SPARK_ROLE]: 'driver' },
      ports: [
        { name: 'driver-rpc-port', port: DRIVER_PORTS.rpc, targetPort: DRIVER_PORTS.rpc, protocol: 'TCP' },
        { name: 'blockmanager', port: DRIVER_PORTS.blockManager, targetPort: DRIVER_PORTS.blockManager, protocol: 'TCP' },
        { name: 'spark-ui', port: DRIVER_PORTS.ui, targetPort: DRIVER_PORTS.ui, protocol: 'TCP' },
      ],
    },
  };
}

/** Any pod may name the Service as its subdomain; only one whose hostname is its own (unique) name passes. */
export function driverDnsPolicy(namespace: string, service: string): NamespacePolicy {
  const name = `submission-service-driver-dns-${namespace}`;
  return {
    policy: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] },
        validations: [{
          expression: `!has(object.spec.subdomain) || object.spec.subdomain != '${service}' || (has(object.spec.hostname) && object.spec.hostname == object.metadata.name)`,
          message: `a pod under the drivers' Service ${service} must have its own name as its hostname`,
          reason: 'Forbidden',
        }],
      },
    },
    binding: namespaceBinding(name, namespace),
  };
}

export async function ensureDriverService(clients: KubeClients, namespace: string, name: string): Promise<void> {
  await ensureNamespacePolicy(clients, driverDnsPolicy(namespace, name));
  await clients.core.createNamespacedService({ namespace, body: driverService(namespace, name) }).catch(unlessExists);
}
