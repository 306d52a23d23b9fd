// What a submission's own overrides may ask for, and who may act on an application. Pure
// functions shared by the API, the webhook and local mode, so all three refuse the same
// things with the same words. Templates are written by admins and are not checked here.
import type { ApplicationConfig } from '../schemas/index.js';
import { kubernetesPropertyAllowed } from './kubernetes-properties.js';
import { KERNEL_CLAIMER_LABEL } from './labels.js';
import { localBindingRefusal } from './local-binding.js';

export interface SubmissionPolicy {
  /** Service accounts configOverrides may name (driver/executor.serviceAccount). The default one is always allowed. */
  serviceAccounts: string[];
  /** Secrets configOverrides may mount (driver/executor.secrets[].name). */
  secrets: string[];
  /** Whether a `user` key may stop, delete and read the log of applications other keys submitted. */
  usersActOnAllApplications: boolean;
  /**
   * Local mode: drivers are processes of the service's own OS user, so environment variables
   * that change how a shell, the dynamic loader, Python, the JVM or Spark's launch scripts
   * behave are refused (see FORBIDDEN_ENV).
   */
  refuseLauncherEnvironment: boolean;
  /** `spark.kubernetes.*` keys engineConf may set besides the built-in allowlist (kubernetes-properties.ts); `x.*` allows a family. */
  kubernetesProperties: string[];
}

export const defaultPolicy: SubmissionPolicy = {
  serviceAccounts: [],
  secrets: [],
  usersActOnAllApplications: false,
  refuseLauncherEnvironment: false,
  kubernetesProperties: [],
};

/** The policy section of the node-pool file (or chart values), with defaults filled in. */
export function buildPolicy(section: Partial<SubmissionPolicy> | undefined): SubmissionPolicy {
  return { ...defaultPolicy, ...section };
}

/** Names that make a shell, the loader or an interpreter run code or look elsewhere for it. */
export const FORBIDDEN_ENV = [
  // shells (sh, dash, bash: startup files, prompts, traces, word splitting, lookup)
  'BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4', 'PROMPT_COMMAND', 'IFS', 'CDPATH', 'GLOBIGNORE', 'PATH', 'SHELL', 'HOME',
  // interpreters that spark-submit or the application start
  'PYTHONSTARTUP', 'PYTHONPATH', 'PYTHONHOME', 'PYTHONINSPECT', 'PYTHONUSERBASE', 'PYTHONWARNINGS', 'PYTHONEXECUTABLE', 'PYTHONSAFEPATH',
  'PERL5OPT', 'PERL5LIB', 'PERLLIB', 'RUBYOPT', 'RUBYLIB', 'NODE_OPTIONS',
  // the JVM
  'JAVA_HOME', 'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS', 'CLASSPATH',
  // libc
  'GCONV_PATH', 'HOSTALIASES', 'LOCALDOMAIN', 'RES_OPTIONS', 'NLSPATH', 'TMPDIR',
  // the service's exit-code wrapper
  'EXIT_FILE',
];
/** Whole families: the loader (LD_PRELOAD, LD_LIBRARY_PATH, …), exported bash functions, Spark's and PySpark's launch scripts. */
export const FORBIDDEN_ENV_PREFIXES = ['LD_', 'DYLD_', 'BASH_FUNC_', 'SPARK_', 'PYSPARK_', 'MALLOC_'];

/** Spark properties that set environment variables of the driver or the executors. */
const ENV_PROPERTY_PREFIXES = ['spark.executorEnv.', 'spark.kubernetes.driverEnv.', 'spark.yarn.appMasterEnv.', 'spark.mesos.driverEnv.'];

export const isForbiddenEnvName = (name: string) =>
  FORBIDDEN_ENV.includes(name.toUpperCase()) || FORBIDDEN_ENV_PREFIXES.some((prefix) => name.toUpperCase().startsWith(prefix));

export interface PolicyRefusal {
  /** The path in the submission, e.g. `configOverrides.driver.env.BASH_ENV`. */
  field: string;
  message: string;
}

/**
 * The first thing in a submission's overrides that the policy refuses, or undefined.
 * `defaultServiceAccount` is the one admission fills in; naming it is always allowed.
 */
export function checkOverrides(overrides: ApplicationConfig | undefined, policy: SubmissionPolicy, defaultServiceAccount: string): PolicyRefusal | undefined {
  if (!overrides) return undefined;
  // Local mode: nothing may move a driver's UI or RPC off loopback (local-binding.ts).
  const rebinding = policy.refuseLauncherEnvironment ? localBindingRefusal(overrides) : undefined;
  if (rebinding) return rebinding;
  for (const role of ['driver', 'executor'] as const) {
    const pod = overrides[role];
    if (!pod) continue;
    const account = pod.serviceAccount;
    if (account !== undefined && account !== defaultServiceAccount && !policy.serviceAccounts.includes(account)) {
      return {
        field: `configOverrides.${role}.serviceAccount`,
        message: `field "configOverrides.${role}.serviceAccount": service account "${account}" is not allowed for submissions (allowed: ${[defaultServiceAccount, ...policy.serviceAccounts].join(', ')}; a config template may name others)`,
      };
    }
    for (const [i, secret] of (pod.secrets ?? []).entries()) {
      if (!policy.secrets.includes(secret.name)) {
        return {
          field: `configOverrides.${role}.secrets.${i}.name`,
          message: `field "configOverrides.${role}.secrets.${i}.name": secret "${secret.name}" is not allowed for submissions (allowed: ${policy.secrets.join(', ') || 'none'}; a config template may mount others)`,
        };
      }
    }
    if (policy.refuseLauncherEnvironment) {
      for (const name of Object.keys(pod.env ?? {})) {
        if (isForbiddenEnvName(name)) return envRefusal(`configOverrides.${role}.env.${name}`, name);
      }
    }
  }
  const closed = Object.keys(overrides.engineConf ?? {}).find((key) => !kubernetesPropertyAllowed(key, policy.kubernetesProperties));
  if (closed !== undefined) {
    return {
      field: `configOverrides.engineConf.${closed}`,
      message: `field "configOverrides.engineConf.${closed}": Spark property ${closed} is not allowed for submissions (service accounts, secrets, volumes, images, placement and sizing come from the config and its template; the spark.kubernetes.* keys a submission may set are listed in docs/security.md)`,
    };
  }
  if (policy.refuseLauncherEnvironment) {
    for (const key of Object.keys(overrides.engineConf ?? {})) {
      const prefix = ENV_PROPERTY_PREFIXES.find((p) => key.startsWith(p));
      if (prefix && isForbiddenEnvName(key.slice(prefix.length))) return envRefusal(`configOverrides.engineConf.${key}`, key.slice(prefix.length));
    }
  }
  return undefined;
}

const envRefusal = (field: string, name: string): PolicyRefusal => ({
  field,
  message: `field "${field}": environment variable ${name} is not allowed in local mode (it changes how the driver's shell, loader or interpreter starts; see docs/security.md)`,
});

/**
 * Whether a caller may stop, delete or read the log of an application. No caller =
 * authentication off: everyone may. Admins may act on every application; users on those
 * their own key submitted, unless the policy opens all of them.
 */
export function mayActOn(caller: { id: string; role: 'user' | 'admin' } | null | undefined, submittedBy: string | null | undefined, policy: SubmissionPolicy): boolean {
  if (!caller || caller.role === 'admin' || policy.usersActOnAllApplications) return true;
  return submittedBy === caller.id;
}

/**
 * mayActOn for an application record: its submitter, or the key that claimed it from a warm pool
 * (KERNEL_CLAIMER_LABEL: the pool's gateway submitted it, the kernel is the claimer's).
 */
export function mayActOnApplication(caller: { id: string; role: 'user' | 'admin' } | null | undefined,
  app: { submittedBy?: string | null; labels?: Record<string, string> | null }, policy: SubmissionPolicy): boolean {
  const claimer = app.labels?.[KERNEL_CLAIMER_LABEL];
  return mayActOn(caller, app.submittedBy, policy) || (claimer !== undefined && mayActOn(caller, claimer, policy));
}
