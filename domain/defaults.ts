// Defaults a submission does not have to spell out. Values already present win.
import type { ApplicationConfig, PodConfig, SecretMount } from '../schemas/index.js';
import { engineMajor } from './engine-versions.js';
import { eventLogDefaults } from './event-log.js';
import type { AdmissionRules } from './rules.js';

/** Spark's own keys for dynamic allocation without an external shuffle service (Spark 3.0 and later, 4.x included). */
export const DYNAMIC_ALLOCATION_DEFAULTS: Record<string, string> = {
  'spark.dynamicAllocation.enabled': 'true',
  'spark.dynamicAllocation.shuffleTracking.enabled': 'true',
};

export function imageFor(version: string, rules: AdmissionRules): string {
  return rules.images[version] ?? rules.imagePattern.replaceAll('{version}', version);
}

/** Where a CloudServiceAccount secret's key file is, as Google's libraries and the GCS connector read it. */
export const keyFilePath = (secret: SecretMount): string => `${secret.path.replace(/\/+$/, '')}/key.json`;

/** Spark and Hadoop settings that make object storage use a CloudServiceAccount's key.json. */
export function cloudCredentialConf(secret: SecretMount): Record<string, string> {
  const keyFile = keyFilePath(secret);
  return {
    // GCS connector 2.x
    'spark.hadoop.google.cloud.auth.service.account.enable': 'true',
    'spark.hadoop.google.cloud.auth.service.account.json.keyfile': keyFile,
    // GCS connector 3.x
    'spark.hadoop.fs.gs.auth.type': 'SERVICE_ACCOUNT_JSON_KEYFILE',
    'spark.hadoop.fs.gs.auth.service.account.json.keyfile': keyFile,
    // Client libraries in executors (the driver gets the variable in its pod spec)
    'spark.executorEnv.GOOGLE_APPLICATION_CREDENTIALS': keyFile,
  };
}

const cloudSecrets = (config: ApplicationConfig): SecretMount[] =>
  [...(config.driver?.secrets ?? []), ...(config.executor?.secrets ?? [])]
    .filter((s) => s.secretType === 'CloudServiceAccount');

function engineDefaults(config: ApplicationConfig, version: string, rules: AdmissionRules): Record<string, string> {
  const defaults: Record<string, string> = eventLogDefaults(rules.eventLog);
  // Shuffle tracking came with 3.0; every later major keeps it (an unparsable version gets none).
  if (engineMajor(version) >= 3) Object.assign(defaults, DYNAMIC_ALLOCATION_DEFAULTS);
  for (const secret of cloudSecrets(config)) Object.assign(defaults, cloudCredentialConf(secret));
  return defaults;
}

export function applyDefaults(config: ApplicationConfig, rules: AdmissionRules): ApplicationConfig {
  const engineVersion = config.engineVersion ?? rules.defaultEngineVersion;
  const driver: PodConfig = { ...config.driver, serviceAccount: config.driver?.serviceAccount ?? rules.serviceAccount };
  const executor: PodConfig = { ...config.executor, instances: config.executor?.instances ?? 1 };
  return {
    ...config,
    type: config.type ?? (config.mainApplicationFile?.endsWith('.py') ? 'Python' : 'Scala'),
    engineVersion,
    mode: config.mode ?? 'cluster',
    // `{version}` in a given image too: one kernel image setting serves every version's kernels.
    image: config.image?.replaceAll('{version}', engineVersion) ?? imageFor(engineVersion, rules),
    engineConf: Object.assign(engineDefaults(config, engineVersion, rules), config.engineConf),
    driver,
    executor,
    restartPolicy: { type: 'Never', ...config.restartPolicy },
  };
}
