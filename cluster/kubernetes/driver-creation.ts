// A submission's writes in Kubernetes mode (kubernetes-cluster.ts createDriver): the
// Application first, then what must exist before its driver runs (its own NetworkPolicy, a
// Connect server's token Secret, a kernel's launcher Secret), then the driver pod, owned by the
// Application, through admission.
// Any step that fails undoes the Application, so no record stays without its pod (else the
// controller marks it UNKNOWN after its grace period).
import type { V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import {
  ANNOTATION_ADMITTED, ANNOTATION_SUBMITTED_BY, applicationLabels, LABEL_JOB, LABEL_TEMPLATE, launcherSecretName, readConfig, withLauncherSecret,
} from '../../domain/index.js';
import { ANNOTATION_IDEMPOTENCY, idempotencyOf } from '../app-record.js';
import { type CreateOptions, type CreateResult, UnavailableError } from '../cluster.js';
import type { AppCache } from './app-cache.js';
import { appNetworkPolicy } from './app-network-policy.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent, missedAdmission, translate, webhookRefusal } from './errors.js';
import type { ApiAdmission, ExpectedAdmission } from './expected-admission.js';
import type { Log as LogFn } from './informers.js';
import { postJson } from './json-call.js';
import { createLauncherSecret } from './launcher-secret.js';
import { createAppNetworkPolicy } from './network-policy-controller.js';
import { withConnectTokenSecret } from './connect-token-secret.js';
import { type ApplicationResource, applicationResource, desiredStatus, toRecord } from './records.js';

export interface DriverCreationDeps {
  clients: KubeClients;
  namespace: string;
  cache: AppCache;
  log: LogFn;
  /** Give each application its own NetworkPolicy before its driver (controller-wiring.ts). */
  appNetworkPolicies?: boolean;
  /** The key of Connect servers' tokens (domain/connect-server-token.ts); absent: they get none. */
  connectTokenKey?: Buffer;
  /** What the webhook would admit, when this process has its rules; undefined when unknown. */
  expectedAdmission(bare: V1Pod, dryRun: boolean): Promise<ApiAdmission | undefined>;
}

type Refusal = Extract<CreateResult, { ok: false }>;

export async function createDriver(deps: DriverCreationDeps, bare: V1Pod, { dryRun, launcherToken }: CreateOptions): Promise<CreateResult> {
  const appName = bare.metadata!.name!;
  // With the webhook's rules the API admits the pod itself (expected-admission.ts): a refusal
  // is answered before anything is written, an admitted pod is written as admitted.
  const admission = await deps.expectedAdmission(bare, dryRun === true);
  if (admission?.outcome === 'refused') return { ok: false, status: admission.status, body: admission.body };
  const expected = admission;
  // The Application first: the pod is created owned by it, so a crash in between leaves a
  // record the controller marks UNKNOWN, never a driver that runs unseen.
  const owner = dryRun ? undefined : await recordApplication(deps, bare, expected);
  const ownerReferences = owner
    ? [{ apiVersion: owner.apiVersion, kind: 'Application', name: appName, uid: owner.metadata.uid!, controller: true }]
    : undefined;
  const withCredential = ownerReferences ? await beforeDriver(deps, bare, ownerReferences[0], launcherToken) : bare;
  const written: V1Pod = { ...withCredential, metadata: { ...withCredential.metadata, namespace: deps.namespace, ...(ownerReferences ? { ownerReferences } : {}) } };
  const body = expected ? expected.admit(written) : written;
  let pod: V1Pod | Refusal;
  try {
    pod = await createPod(deps, body, dryRun);
  } catch (error) {
    if (owner) await dropApplication(deps, appName);
    throw error;
  }
  if ('ok' in pod) {
    if (owner) await dropApplication(deps, appName);
    return pod;
  }
  const config = readConfig(pod);
  if (!config || !pod.metadata?.annotations?.[ANNOTATION_ADMITTED]) {
    if (owner) await dropApplication(deps, appName); // the garbage collector takes the pod
    throw new UnavailableError('the admission webhook did not admit the driver pod (its objectSelector may not match our labels)');
  }
  if (!owner) {
    const labels = bare.metadata?.labels ?? {};
    const draft = { ...applicationResource({ appName, namespace: deps.namespace, labels: applicationLabels(pod.metadata.labels), jobName: labels[LABEL_JOB] ?? '', configTemplateName: labels[LABEL_TEMPLATE] ?? '', submittedBy: pod.metadata.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null }, {}), };
    draft.metadata.creationTimestamp = pod.metadata.creationTimestamp ?? new Date();
    return { ok: true, record: toRecord(draft, desiredStatus(draft, { pod, deleted: false }, 0), { pod, deleted: false }), pod };
  }
  // Admitted otherwise than expected (rules that differ between the API and the webhook): the
  // controller corrects the Application from the pod, the config's one writer after creation.
  // The next read (this replica) sees it: the cache has caught up with both writes.
  const cached = await deps.cache.until(appName, (r) => r !== undefined && Object.keys(r.config).length > 0 && deps.cache.driver(appName) !== undefined);
  const record = cached ?? toRecord(owner, desiredStatus(owner, { pod, deleted: false }, 0), { pod, deleted: false });
  return { ok: true, record: { ...record, config }, pod };
}

/** Writes the submission's Application (with admission's config when the API admitted the pod). */
function recordApplication(deps: DriverCreationDeps, bare: V1Pod, expected: ExpectedAdmission | undefined): Promise<ApplicationResource> {
  const labels = bare.metadata?.labels ?? {};
  const appName = bare.metadata!.name!;
  const draft = applicationResource({
    appName, namespace: deps.namespace, labels: applicationLabels(labels), jobName: labels[LABEL_JOB] ?? '',
    configTemplateName: labels[LABEL_TEMPLATE] ?? '', submittedBy: bare.metadata?.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null,
  }, { [LABEL_JOB]: labels[LABEL_JOB] ?? '', ...(labels[LABEL_TEMPLATE] ? { [LABEL_TEMPLATE]: labels[LABEL_TEMPLATE] } : {}) });
  if (expected) {
    draft.spec.config = expected.config;
    if (Object.keys(expected.annotations).length > 0) draft.metadata.annotations = expected.annotations;
  }
  // The Idempotency-Key's mark (submit-api/idempotency.ts) goes with the Application: any replica compares it.
  const { idempotency } = idempotencyOf(bare);
  if (idempotency !== undefined) draft.metadata.annotations = { ...draft.metadata.annotations, [ANNOTATION_IDEMPOTENCY]: idempotency };
  return kubeCall(deps.clients.server, `record application ${appName}`, () =>
    postJson<ApplicationResource>(deps.clients.kc, `/apis/${GROUP}/${VERSION}/namespaces/${deps.namespace}/${APPLICATIONS}?fieldManager=${FIELD_MANAGER}`, draft));
}

/**
 * What must exist before the driver: the application's NetworkPolicy, a Connect server's token
 * Secret and a kernel's launcher Secret. Returns the bare pod naming its Secrets; undoes the
 * Application on failure.
 */
async function beforeDriver(deps: DriverCreationDeps, bare: V1Pod, owner: V1OwnerReference, launcherToken: string | undefined): Promise<V1Pod> {
  const appName = bare.metadata!.name!;
  let pod = bare;
  try {
    if (deps.appNetworkPolicies) {
      // Before the driver: its pods never run without the policy that keeps other runs out.
      // The controller may have made it already (network-policy-controller.ts: 409 is no error).
      await kubeCall(deps.clients.server, `create the NetworkPolicy of ${appName}`, () => createAppNetworkPolicy(deps.clients.kc, deps.namespace, appNetworkPolicy(appName, owner)));
    }
    // A Connect server's own token: only the endpoint's relay may call it (domain/connect-server-token.ts).
    pod = await withConnectTokenSecret(deps, pod, appName, owner);
    if (launcherToken === undefined) return pod;
    // The kernel's token: a Secret owned by the Application (it goes with it), mounted into the
    // driver; only the file's path is in the pod's env (domain/launcher-credential.ts).
    await createLauncherSecret(deps.clients, deps.namespace, { appName, secretName: launcherSecretName(appName), token: launcherToken, owner });
  } catch (error) {
    await dropApplication(deps, appName);
    throw error;
  }
  return withLauncherSecret(pod, launcherSecretName(appName));
}

/** The admitted pod, or our refusal (CreateResult with ok false). */
async function createPod(deps: DriverCreationDeps, body: V1Pod, dryRun: boolean): Promise<V1Pod | Refusal> {
  try {
    return await postJson<V1Pod>(deps.clients.kc, `/api/v1/namespaces/${deps.namespace}/pods?fieldManager=${FIELD_MANAGER}${dryRun ? '&dryRun=All' : ''}`, body);
  } catch (error) {
    const refusal = webhookRefusal(error);
    if (refusal) return { ok: false, ...refusal };
    if (missedAdmission(error)) {
      throw new UnavailableError('the admission webhook is not installed: the driver pod reached the apiserver without being admitted (check the MutatingWebhookConfiguration)');
    }
    throw translate(error, deps.clients.server, 'create the driver pod');
  }
}

/** Undoes the Application of a submission that did not get its pod; if this fails, the controller marks it UNKNOWN after its grace period. */
async function dropApplication(deps: DriverCreationDeps, appName: string): Promise<void> {
  try {
    await kubeCallOrAbsent(deps.clients.server, `delete application ${appName}`, () =>
      deps.clients.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: APPLICATIONS, namespace: deps.namespace, name: appName }));
  } catch (error) {
    deps.log(`could not remove application ${appName} after its pod failed: ${(error as Error).message}`);
  }
}
