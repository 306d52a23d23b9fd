// Local mode: every driver shares the machine's network, and its Spark UI (jobs, environment,
// GET kill links) must answer on loopback only, reached through the service's proxy. The
// service binds it there (SPARK_LOCAL_IP and spark.driver.bindAddress, cluster/local/
// spark-command.ts); these are the settings of a submission that would undo that, refused with
// a 400 naming the field, by the API, dry runs and local admission alike.
import type { ApplicationConfig } from '../schemas/index.js';

/**
 * Spark properties that move a local driver's listening sockets: the RPC and block manager's
 * address, the UI's port (the proxy knows only the one it gave), and the environment properties
 * that could set SPARK_LOCAL_IP (Spark's WebUI binds that address, else every interface).
 */
const REBINDING_PROPERTIES = ['spark.driver.bindAddress', 'spark.ui.port'];
/** Environment variables that choose the address Spark binds or advertises. */
const REBINDING_ENV = ['SPARK_LOCAL_IP', 'SPARK_PUBLIC_DNS', 'SPARK_LOCAL_HOSTNAME'];
/** Spark properties that set environment variables of the driver or the executors. */
const ENV_PROPERTY_PREFIXES = ['spark.executorEnv.', 'spark.driverEnv.', 'spark.kubernetes.driverEnv.', 'spark.yarn.appMasterEnv.', 'spark.mesos.driverEnv.'];

export interface BindingRefusal { field: string; message: string }

const refusal = (field: string, what: string): BindingRefusal => ({
  field,
  message: `field "${field}": ${what} is set by the service in local mode (each driver's Spark UI and RPC listen on loopback only and are reached through the dashboard's proxy; see docs/security.md)`,
});

/** The first setting of a submission's overrides that would rebind a local driver's UI or RPC, or undefined. */
export function localBindingRefusal(overrides: ApplicationConfig | undefined): BindingRefusal | undefined {
  if (!overrides) return undefined;
  for (const role of ['driver', 'executor'] as const) {
    const name = Object.keys(overrides[role]?.env ?? {}).find((key) => REBINDING_ENV.includes(key.toUpperCase()));
    if (name !== undefined) return refusal(`configOverrides.${role}.env.${name}`, `environment variable ${name}`);
  }
  for (const key of Object.keys(overrides.engineConf ?? {})) {
    if (REBINDING_PROPERTIES.includes(key)) return refusal(`configOverrides.engineConf.${key}`, `Spark property ${key}`);
    const prefix = ENV_PROPERTY_PREFIXES.find((p) => key.startsWith(p));
    if (prefix && REBINDING_ENV.includes(key.slice(prefix.length).toUpperCase())) {
      return refusal(`configOverrides.engineConf.${key}`, `environment variable ${key.slice(prefix.length)}`);
    }
  }
  return undefined;
}
