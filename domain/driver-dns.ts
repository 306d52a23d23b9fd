// How executors reach their driver: by a DNS name under one headless Service shared by every
// driver of the namespace (no object per application, so a submission stays two writes), or,
// without that Service, by the driver pod's IP.
import type { V1PodSpec } from '@kubernetes/client-node';

/** A DNS-1123 label: what `spec.hostname` must be, and one part of a DNS name. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The drivers' Service the chart and the test bed's real node create (values: driverService). */
export const DEFAULT_DRIVER_SERVICE = 'spark-drivers';

/** spark.driver.host when executors dial the pod IP (Kubernetes expands `$(VAR)` in arguments). */
export const POD_IP_HOST = '$(SPARK_DRIVER_BIND_ADDRESS)';

export interface DriverAddress {
  /** spark.driver.host: what executors dial. */
  host: string;
  /** `spec.hostname` and `spec.subdomain` of the driver pod; absent when executors dial its IP. */
  pod?: Pick<V1PodSpec, 'hostname' | 'subdomain'>;
  /** Why the pod IP is used although a driver Service is configured. */
  fallback?: string;
}

/**
 * The driver's address. With `service` (the namespace's headless driver Service) the pod gets
 * hostname = its name and subdomain = the Service, and the endpoint slice controller and
 * cluster DNS publish `<appName>.<service>.<namespace>.svc` for it; `.svc` without the cluster
 * domain resolves through the pods' search path, whatever that domain is (Spark's own
 * cluster mode names its driver Service the same way). The pod IP serves when there is no
 * Service, or when appName cannot be a hostname (a team's pod may be named with dots or
 * longer than 63 characters; the API's appNames always fit).
 */
export function driverAddress(appName: string, namespace: string, service: string | undefined): DriverAddress {
  if (!service) return { host: POD_IP_HOST };
  if (!DNS_LABEL.test(appName)) {
    return { host: POD_IP_HOST, fallback: `appName ${JSON.stringify(appName)} is not a DNS-1123 label of at most 63 characters: executors dial the driver's pod IP` };
  }
  return { host: `${appName}.${service}.${namespace}.svc`, pod: { hostname: appName, subdomain: service } };
}
