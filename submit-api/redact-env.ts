// What an application's readers may see of its environment. Every key reads every application
// (GET /api/apps/{app}, the list, the events stream), but environment values are the usual
// place for a credential, so only the key that submitted it and admins see them: for anyone
// else each value of driver.env, executor.env and the env-setting Spark properties reads
// REDACTED (the names stay: they say what the app was given). Authentication off: no reader is
// anyone in particular, nothing is hidden.
import type { Application, ApplicationConfig } from '../schemas/index.js';
import type { ApiKeyIdentity } from './auth/key-store.js';

export const REDACTED = 'REDACTED';
const ENV_PROPERTY_PREFIXES = ['spark.executorEnv.', 'spark.kubernetes.driverEnv.', 'spark.yarn.appMasterEnv.', 'spark.mesos.driverEnv.'];

const hidden = (env: Record<string, string>) => Object.fromEntries(Object.keys(env).map((name) => [name, REDACTED]));

/** Whether `reader` sees the environment values of what `submittedBy` submitted. */
export const seesEnvOf = (reader: ApiKeyIdentity | null | undefined, submittedBy: string | null | undefined): boolean =>
  !reader || reader.role === 'admin' || reader.id === submittedBy;

/** The application as `reader` may see it (the same object when nothing is hidden). */
export function redactEnvFor(app: Application, reader: ApiKeyIdentity | null | undefined): Application {
  if (seesEnvOf(reader, app.submittedBy) || !app.config) return app;
  return { ...app, config: redactConfig(app.config) };
}

/** A config (or configOverrides) with every environment value replaced by REDACTED. */
export function redactConfig<T extends Pick<ApplicationConfig, 'driver' | 'executor' | 'engineConf'>>(input: T): T {
  const config = { ...input };
  for (const role of ['driver', 'executor'] as const) {
    const pod = config[role];
    if (pod?.env) config[role] = { ...pod, env: hidden(pod.env) };
  }
  if (config.engineConf) {
    config.engineConf = Object.fromEntries(Object.entries(config.engineConf).map(([key, value]) =>
      [key, ENV_PROPERTY_PREFIXES.some((prefix) => key.startsWith(prefix)) ? REDACTED : value]));
  }
  return config;
}
