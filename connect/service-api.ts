// The endpoint's only way into the service: the public HTTP API, as the caller's key (the same
// route, owner, policy, quotas and fair queue as any POST /api/apps/), like the notebook gateway.
import { GATEWAY_PROOF_HEADER } from '../lib/gateway-proof.js';
import { GrpcRefusal, GrpcStatus, type GrpcStatusCode } from './grpc-status.js';

export interface ConnectApp {
  appName: string;
  state: string;
  stateDetail?: string;
  labels?: Record<string, string>;
  /** The key that submitted (or claimed) it; null with authentication off. */
  submittedBy?: string | null;
  createdAt?: string;
  startedAt?: string | null;
  config?: { engineConf?: Record<string, string> };
}

export interface ConnectTemplate {
  name: string;
  config: { engineVersion?: string };
}

/** The gRPC status a client sees for an HTTP status of the API. */
export function grpcCodeOf(httpStatus: number): GrpcStatusCode {
  const codes: Record<number, GrpcStatusCode> = {
    400: GrpcStatus.INVALID_ARGUMENT, 401: GrpcStatus.UNAUTHENTICATED, 403: GrpcStatus.PERMISSION_DENIED,
    404: GrpcStatus.NOT_FOUND, 409: GrpcStatus.FAILED_PRECONDITION, 422: GrpcStatus.INVALID_ARGUMENT, 429: GrpcStatus.RESOURCE_EXHAUSTED,
  };
  return codes[httpStatus] ?? GrpcStatus.UNAVAILABLE;
}

export class ServiceApi {
  /**
   * `base`: the API's address, known once the server listens (a function). `proof`: the service's
   * own (lib/gateway-proof.ts), sent with submissions (a session's labels) and claims of a warm pool's server.
   */
  constructor(private readonly base: () => string, private readonly proof?: string) {}

  private async call<T>(method: string, path: string, key: string | undefined, body?: unknown, extra: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { ...extra, ...(key ? { 'x-api-key': key } : {}) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(new URL(path, this.base()), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try { message = (JSON.parse(text) as { message?: string }).message ?? text; } catch { /* plain text */ }
      throw new GrpcRefusal(grpcCodeOf(response.status), `the service refused the session's application (HTTP ${response.status}): ${message}`);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  template(name: string, key: string | undefined): Promise<ConnectTemplate> {
    return this.call('GET', `/api/config-templates/${encodeURIComponent(name)}`, key);
  }

  /**
   * With `dryRun`: the same checks as the caller's submission (and counted like one per minute),
   * nothing kept. With the proof: a session's labels are the endpoint's alone (submit-api/service-labels.ts).
   */
  submit(submission: Record<string, unknown>, key: string | undefined, options: { dryRun?: boolean } = {}): Promise<ConnectApp> {
    return this.call('POST', options.dryRun ? '/api/apps/?dryRun=true' : '/api/apps/', key, submission, this.proofHeader());
  }

  private proofHeader(): Record<string, string> { return this.proof ? { [GATEWAY_PROOF_HEADER]: this.proof } : {}; }

  /** Makes a warm pool's server (no submitter) the application of `key` (POST /api/apps/{app}/claim, with the proof). */
  async claim(appName: string, key: string | undefined): Promise<void> {
    await this.call('POST', `/api/apps/${encodeURIComponent(appName)}/claim`, key, undefined, this.proofHeader());
  }

  /** The application, or undefined once it is gone (deleted). */
  async get(appName: string, key: string | undefined): Promise<ConnectApp | undefined> {
    try {
      return await this.call<ConnectApp>('GET', `/api/apps/${encodeURIComponent(appName)}`, key);
    } catch (error) {
      if (error instanceof GrpcRefusal && error.code === GrpcStatus.NOT_FOUND) return undefined;
      throw error;
    }
  }

  /** Stops the application (its record stays, KILLED, with its Spark UI in the history); one already ended is not an error. */
  async stop(appName: string, key: string | undefined): Promise<void> {
    try {
      await this.call('POST', `/api/apps/${encodeURIComponent(appName)}/stop`, key);
    } catch (error) {
      if (!(error instanceof GrpcRefusal && (error.code === GrpcStatus.NOT_FOUND || error.code === GrpcStatus.FAILED_PRECONDITION))) throw error;
    }
  }
}
