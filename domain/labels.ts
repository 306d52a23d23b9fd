// The names by which the service recognises its pods, and Spark's own labels.
export const LABEL_JOB = 'submission-service/job-name';
export const LABEL_TEMPLATE = 'submission-service/config-template';
export const LABEL_APP = 'submission-service/app-name';
/** On a driver pod of attempt 2 or later (restartPolicy OnFailure, Kubernetes mode): which attempt it runs. */
export const LABEL_ATTEMPT = 'submission-service/attempt';
export const ANNOTATION_OVERRIDES = 'submission-service/config-overrides';
/** The effective config, as admission computed it. */
export const ANNOTATION_CONFIG = 'submission-service/config';
/** Stamped on every pod admission changed, with the rule set's version. */
export const ANNOTATION_ADMITTED = 'submission-service/admitted-by';
/** The sizing decision (pool and reasons per pod), recorded by admission on driver pods (sizing-annotation.ts). */
export const ANNOTATION_SIZING = 'submission-service/sizing';
/** Why executors dial this driver's pod IP although the namespace has a driver Service (driver-dns.ts). */
export const ANNOTATION_DRIVER_ADDRESS = 'submission-service/driver-address';
export const RULES_VERSION = 'submission-service-rules/v1';
/**
 * The policy a pod was admitted under: the content hash of the node-pool file (the chart's
 * ConfigMap) the rules came from, so either enforcement point's pods say which copy they used.
 */
export const ANNOTATION_POLICY = 'submission-service/policy';
/** The id of the API key that submitted the application (absent when authentication is off). */
export const ANNOTATION_SUBMITTED_BY = 'submission-service/submitted-by';

export const SPARK_ROLE = 'spark-role';
export const SPARK_APP_SELECTOR = 'spark-app-selector';
export const DRIVER_CONTAINER = 'spark-kubernetes-driver';

/**
 * Label keys the service and Spark write themselves: an application's own labels (the
 * submission's `labels`) may not use them, and they are not reported back as its labels.
 */
export const isReservedLabel = (key: string): boolean => key.startsWith('submission-service/') || key.startsWith('spark-');

/**
 * Labels the notebook gateway sets on its kernels (kernel id, template, pool): reported as an
 * application's labels, but a submission may carry them only with the gateway's proof
 * (lib/gateway-proof.ts): they mark a driver that skips local mode's core queue and that the
 * gateway takes for one of its kernels.
 */
export const KERNEL_LABEL_PREFIX = 'kernel.submission-service.io/';
export const isKernelLabel = (key: string): boolean => key.startsWith(KERNEL_LABEL_PREFIX);
/**
 * On a warm pool's kernel once claimed: the claiming key's id. Set by the API on the gateway's
 * claim (POST /api/apps/{app}/claim, with the gateway's proof and the claimer's key), never by a
 * submission (the kernel prefix is the gateway's); the owner checks honour it beside `submittedBy`.
 */
export const KERNEL_CLAIMER_LABEL = `${KERNEL_LABEL_PREFIX}claimed-by`;
/** On every kernel: the gateway's id of the kernel (gateway/kernel-registry.ts sets it); a retried kernel's launcher credential derives from it. */
export const KERNEL_ID_LABEL_KEY = `${KERNEL_LABEL_PREFIX}id`;
/** On a warm pool's kernels: the template whose pool started it (gateway/kernel-registry.ts sets it). */
export const KERNEL_POOL_LABEL_KEY = `${KERNEL_LABEL_PREFIX}pool`;

/**
 * On a Spark Connect server the endpoint started ahead for its warm pool (connect/warm-pool.ts):
 * the template whose pool it is. The service submits it with no key; the one key whose session it
 * is handed to claims it (POST /api/apps/{app}/claim, with the proof and that key), which makes
 * that key its submitter, once. A submission may carry the label, but then it has a submitter and
 * is never claimed.
 */
export const CONNECT_WARM_LABEL_KEY = 'connect.submission-service.io/warm';

/**
 * On a Spark Connect session's application: its client session id, the template it was started
 * with, and its last activity across API replicas (connect/). The endpoint's alone: a replica
 * finds a session's application, and whose session it is, by them, so a submission may carry
 * them only with the service's proof (lib/gateway-proof.ts), and a pod never.
 */
export const CONNECT_SESSION_LABEL = 'connect.submission-service.io/session';
export const CONNECT_TEMPLATE_LABEL = 'connect.submission-service.io/template';
export const CONNECT_ACTIVITY_LABEL = 'connect.submission-service.io/last-activity';
const CONNECT_SESSION_LABELS = new Set([CONNECT_SESSION_LABEL, CONNECT_TEMPLATE_LABEL, CONNECT_ACTIVITY_LABEL]);
export const isConnectSessionLabel = (key: string): boolean => CONNECT_SESSION_LABELS.has(key);

/** An application's own labels among a pod's or a resource's labels. */
export function applicationLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const own: Record<string, string> = {};
  for (const key in labels) if (!isReservedLabel(key)) own[key] = labels[key];
  return own;
}
