// How the API knows a submission comes from the notebook gateway: the labels that mark kernels
// (domain/labels.ts KERNEL_LABEL_PREFIX) start a driver outside the core queue in local
// mode and tell the gateway which application is which kernel, so the API accepts them only
// with this header, whose value is derived from a secret the gateway and the API share (the
// chart's `gateway.secret`; in local mode a random value that lives in the process only).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const GATEWAY_PROOF_HEADER = 'x-submission-service-gateway';
/**
 * A kernel's one-time launcher token, sent by the gateway with the kernel's submission (and
 * accepted only with the proof): the cluster keeps it beside the driver, never in its config
 * (domain/launcher-credential.ts).
 */
export const LAUNCHER_TOKEN_HEADER = 'x-submission-service-launcher-token';

/** The header's value for a shared secret. */
export function gatewayProof(secret: string): string {
  return createHmac('sha256', secret).update('submission-service: kernel labels').digest('base64url');
}

/** A proof for one process (local mode: the gateway runs inside the API's process). */
export const processGatewayProof = (): string => gatewayProof(randomBytes(32).toString('hex'));

/** True when `sent` is the expected proof; never without an expected one. */
export function isGatewayProof(expected: string | undefined, sent: unknown): boolean {
  if (!expected || typeof sent !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(sent);
  return a.length === b.length && timingSafeEqual(a, b);
}
