// A kernel as an application: the labels that mark it (and find it again after a gateway
// restart), its job name, the submission that starts it, and when a retry's driver is due. Pure.
import { nextAttemptDelayMs, retryPolicy } from '../domain/index.js';
import type { ApiApplication } from './api-client.js';

export const KERNEL_LABEL = 'kernel.submission-service.io/kernel';
export const KERNEL_ID_LABEL = 'kernel.submission-service.io/id';
export const KERNEL_SPEC_LABEL = 'kernel.submission-service.io/spec';
/** On a warm pool's kernels: the template whose pool started it. */
export const KERNEL_POOL_LABEL = 'kernel.submission-service.io/pool';
/** On a warm pool's kernels: a fingerprint of the template config they were started from. */
export const KERNEL_POOL_CONFIG_LABEL = 'kernel.submission-service.io/pool-config';
/** The label selector of every kernel's application. */
export const KERNEL_SELECTOR = `${KERNEL_LABEL}=true`;

const jobNameFor = (spec: string) => `kernel-${spec}`.slice(0, 41).replace(/-+$/, '');

/** Where the kernel's driver finds its launcher and the gateway. */
export interface KernelLaunch {
  /** `local://` path of launcher.py as the driver sees it. */
  launcherFile: string;
  /** The gateway's address as the launcher dials it. */
  launcherUrl: string;
  kernelImage?: string;
  /** The launcher's credential as driver env entries (local mode's token file); absent: the API keeps it beside the driver. */
  launcherEnv?: Record<string, string>;
}

/** A warm pool's kernel: its template and the fingerprint of that template's config. */
export interface PoolOrigin { template: string; version: string }

/** The body of `POST /api/apps/` that starts kernel `id` of `specName` (a template, or `default`). */
export function kernelSubmission(id: string, specName: string, launch: KernelLaunch, pool?: PoolOrigin): Record<string, unknown> {
  const poolLabels = pool ? { [KERNEL_POOL_LABEL]: pool.template, [KERNEL_POOL_CONFIG_LABEL]: pool.version } : {};
  return {
    jobName: jobNameFor(specName),
    ...(specName === 'default' ? {} : { configTemplateName: specName }),
    labels: { [KERNEL_LABEL]: 'true', [KERNEL_ID_LABEL]: id, [KERNEL_SPEC_LABEL]: specName, ...poolLabels },
    configOverrides: {
      type: 'Python',
      ...(launch.kernelImage ? { image: launch.kernelImage } : {}),
      mainApplicationFile: launch.launcherFile,
      driver: {
        env: {
          SUBMISSION_SERVICE_GATEWAY_URL: launch.launcherUrl,
          SUBMISSION_SERVICE_KERNEL_ID: id,
          // Local mode: a file of the gateway's; else the API keeps the token beside the driver.
          ...(launch.launcherEnv ?? {}),
          SUBMISSION_SERVICE_KERNEL_SPEC: specName,
          ...(pool === undefined ? {} : { SUBMISSION_SERVICE_KERNEL_POOL: pool.template }),
        },
      },
    },
  };
}

/**
 * How long after the API's report of attempt `attempt` its driver is created (ms; 0: at once).
 * The API reports a new attempt when the one before ends, and creates its driver the retry
 * interval later (at once after an eviction): the domain's rule, as the cluster applies it, read
 * from the attempts before it (the new attempt's own record, which Kubernetes mode lists before
 * it starts, is left out). A duration on purpose: the due time is stamped with the API's clock,
 * and the gateway, on another host, compared with its own would be off by their skew.
 */
export function attemptDelayMs(app: Pick<ApiApplication, 'attempts' | 'config'>, attempt: number): number {
  return nextAttemptDelayMs((app.attempts ?? []).filter((a) => a.attempt < attempt), retryPolicy(app.config));
}
