// Labels only the service sets. A submission's own `labels` may carry the kernel labels only
// when it comes from the notebook gateway (its proof header); pod labels in configOverrides
// (driver/executor.labels) may never carry them, nor the service's or Spark's own keys: they
// land on the driver pod, where the service reads them. Templates (written by admins) are not
// checked. Without this a user app labelled as a kernel skipped the core queue in local mode
// and ended that kernel when it ended.
import type { Submission } from '../schemas/index.js';
import { isKernelLabel, isReservedLabel } from '../webhook/domain/index.js';
import { GATEWAY_PROOF_HEADER, isGatewayProof } from '../lib/gateway-proof.js';
import { HttpError } from './errors.js';

/** Throws 400 when the submission sets a label only the service may set. */
export function refuseServiceLabels(body: Submission, headers: Record<string, unknown>, expectedProof: string | undefined): void {
  const kernel = Object.keys(body.labels ?? {}).find(isKernelLabel);
  if (kernel !== undefined && !isGatewayProof(expectedProof, headers[GATEWAY_PROOF_HEADER])) {
    throw new HttpError(400, `field "labels": the label "${kernel}" marks a notebook kernel and is set by the notebook gateway only (start kernels through /notebooks/)`);
  }
  for (const role of ['driver', 'executor'] as const) {
    const own = Object.keys(body.configOverrides?.[role]?.labels ?? {}).find((key) => isKernelLabel(key) || isReservedLabel(key));
    if (own !== undefined) {
      throw new HttpError(400, `field "configOverrides.${role}.labels": the label "${own}" is the service's own (keys beginning with submission-service/, spark- or kernel.submission-service.io/ are set by the service only)`);
    }
  }
}
