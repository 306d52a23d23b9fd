// Labels only the service sets. A submission's own `labels` may carry the kernel labels only
// when it comes from the notebook gateway, a Connect session's only from the Connect endpoint
// (the service's proof header, lib/gateway-proof.ts); pod labels in configOverrides
// (driver/executor.labels) may never carry them, nor the service's or Spark's own keys: they
// land on the driver pod, where the service reads them. Neither may carry the labels the
// service's own pods are known by (domain/service-identity.ts; admission refuses them too, a
// template's included). Templates (written by admins) are not checked here. Without this a user
// app labelled as a kernel skipped the core queue in local mode and ended that kernel when it ended.
import type { Submission } from '../schemas/index.js';
import { isConnectSessionLabel, isKernelLabel, isLauncherToken, isReservedLabel, isScheduleLabel, SERVICE_IDENTITY_LABELS, serviceIdentityLabel } from '../domain/index.js';
import { GATEWAY_PROOF_HEADER, isGatewayProof, LAUNCHER_TOKEN_HEADER } from '../lib/gateway-proof.js';
import { HttpError } from './errors.js';

/** Throws 400 when the submission sets a label only the service may set. */
export function refuseServiceLabels(body: Submission, headers: Record<string, unknown>, expectedProof: string | undefined): void {
  const kernel = Object.keys(body.labels ?? {}).find(isKernelLabel);
  if (kernel !== undefined && !isGatewayProof(expectedProof, headers[GATEWAY_PROOF_HEADER])) {
    throw new HttpError(400, `field "labels": the label "${kernel}" marks a notebook kernel and is set by the notebook gateway only (start kernels through /notebooks/)`);
  }
  const session = Object.keys(body.labels ?? {}).find(isConnectSessionLabel);
  if (session !== undefined && !isGatewayProof(expectedProof, headers[GATEWAY_PROOF_HEADER])) {
    throw new HttpError(400, `field "labels": the label "${session}" marks a Spark Connect session and is set by the Spark Connect endpoint only (open a session with a Spark Connect client)`);
  }
  const scheduled = Object.keys(body.labels ?? {}).find(isScheduleLabel);
  if (scheduled !== undefined) {
    throw new HttpError(400, `field "labels": the label "${scheduled}" marks a schedule's runs and is set by the scheduler only (create a schedule: POST /api/schedules/)`);
  }
  // Admission refuses these too (domain/service-identity.ts); here the answer names the field.
  const identity = serviceIdentityLabel(body.labels);
  if (identity !== undefined) throw new HttpError(400, identityMessage('labels', identity));
  for (const role of ['driver', 'executor'] as const) {
    const worn = serviceIdentityLabel(body.configOverrides?.[role]?.labels);
    if (worn !== undefined) throw new HttpError(400, identityMessage(`configOverrides.${role}.labels`, worn));
    const own = Object.keys(body.configOverrides?.[role]?.labels ?? {}).find((key) => isKernelLabel(key) || isReservedLabel(key) || isScheduleLabel(key) || isConnectSessionLabel(key));
    if (own !== undefined) {
      throw new HttpError(400, `field "configOverrides.${role}.labels": the label "${own}" is the service's own (keys beginning with submission-service/, spark- or kernel.submission-service.io/, and a Connect session's, are set by the service only)`);
    }
  }
}

const identityMessage = (field: string, key: string) =>
  `field "${field}": the label "${key}" marks the service's own pods (${SERVICE_IDENTITY_LABELS.join(', ')}), which the chart's NetworkPolicies admit to drivers' UIs and the History Server; an application's pods may not carry it`;

/**
 * A kernel's launcher token sent with its submission (LAUNCHER_TOKEN_HEADER), accepted only from
 * the notebook gateway (its proof header): the cluster keeps it beside the driver, never in its
 * config. Undefined without the header; 400 without the proof or for a malformed token.
 */
export function launcherTokenOf(headers: Record<string, unknown>, expectedProof: string | undefined): string | undefined {
  const sent = headers[LAUNCHER_TOKEN_HEADER];
  if (sent === undefined) return undefined;
  if (!isGatewayProof(expectedProof, headers[GATEWAY_PROOF_HEADER])) {
    throw new HttpError(400, `header "${LAUNCHER_TOKEN_HEADER}": a launcher token is sent by the notebook gateway only (start kernels through /notebooks/)`);
  }
  if (!isLauncherToken(sent)) throw new HttpError(400, `header "${LAUNCHER_TOKEN_HEADER}": not a launcher token (16 to 256 characters of A-Z, a-z, 0-9, - and _)`);
  return sent;
}
