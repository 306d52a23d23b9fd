// Kubernetes errors, surfaced: a webhook refusal becomes our own error body again; an
// unreachable apiserver or a missing webhook becomes 503 saying which.
import { statusCode } from '../../lib/api-error.js';
import { ConflictError, NotFoundError, UnavailableError } from '../cluster.js';

interface KubeStatus { message?: string; reason?: string; code?: number }

export { statusCode };

export function apiStatus(error: unknown): { code?: number; status?: KubeStatus } {
  const e = error as { code?: unknown; body?: unknown };
  if (typeof e?.code !== 'number') return {};
  let status: KubeStatus | undefined;
  if (typeof e.body === 'string') {
    try { status = JSON.parse(e.body) as KubeStatus; } catch { status = { message: e.body }; }
  } else if (e.body && typeof e.body === 'object') status = e.body as KubeStatus;
  return { code: e.code, status };
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT',
  // The kubeconfig's proxy did not open a tunnel to the apiserver (connect-tunnel.ts).
  'EPROXYTUNNEL']);

// The apiserver answers but its certificate does not check out (e.g. it came back with a
// new CA): it is not reachable as configured either, and nothing the client sent is wrong.
const TLS_CODES = new Set(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID']);

function codeIn(error: unknown, codes: Set<string>): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string' && codes.has(e.code)) return e.code;
  }
  return undefined;
}

const networkCode = (error: unknown) => codeIn(error, NETWORK_CODES);

/** Turns any error from the client into one of ours, keeping Kubernetes' own message. */
export function translate(error: unknown, server: string, what: string): Error {
  const network = networkCode(error);
  if (network) return new UnavailableError(`the Kubernetes API server at ${server} is unreachable (${network}) while trying to ${what}`);
  const tls = codeIn(error, TLS_CODES);
  if (tls) return new UnavailableError(`the Kubernetes API server at ${server} failed TLS verification (${tls}) while trying to ${what}`);
  const { code, status } = apiStatus(error);
  const message = status?.message ?? (error as Error).message;
  if (code === 409) return new ConflictError(message);
  if (code === 404) return new NotFoundError(message);
  if (code === 429 || code === 503 || code === 504) return new UnavailableError(`Kubernetes could not ${what}: ${message}`);
  if (code === 500 && /failed calling webhook/.test(message)) {
    return new UnavailableError(`the admission webhook did not answer, so Kubernetes refused to ${what}: ${message}`);
  }
  return new KubernetesError(code ?? 500, `Kubernetes refused to ${what}: ${message}`);
}

/** An error answer from the apiserver that is none of the above; its status is passed on. */
export class KubernetesError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }
}

const DENIED = 'denied the request: ';

/** The JSON body our webhook put in a refusal's message, if this error is one. */
export function webhookRefusal(error: unknown): { status: number; body: { message: string } } | undefined {
  const { code, status } = apiStatus(error);
  const message = status?.message ?? '';
  const at = message.indexOf(DENIED);
  if (code === undefined || at < 0) return undefined;
  try {
    const body = JSON.parse(message.slice(at + DENIED.length)) as { message?: unknown };
    if (typeof body?.message === 'string') return { status: code, body: body as { message: string } };
  } catch { /* not ours */ }
  return { status: code, body: { message } };
}

/** A bare pod that reached validation unmutated: the webhook is not registered. */
export function missedAdmission(error: unknown): boolean {
  const { code, status } = apiStatus(error);
  return code === 422 && /containers\[0\]\.image: Required value/.test(status?.message ?? '');
}

/** Runs one call to the apiserver; any failure comes back as one of our errors (translate). */
export async function kubeCall<T>(server: string, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw translate(error, server, what);
  }
}

/** The same, with 404 meaning "absent": undefined instead of an error. */
export async function kubeCallOrAbsent<T>(server: string, what: string, run: () => Promise<T>): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    throw translate(error, server, what);
  }
}

/** For creates that may find the object there already (409): rethrows anything else. */
export function unlessExists(error: unknown): void {
  if (statusCode(error) !== 409) throw error;
}
