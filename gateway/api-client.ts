// The gateway's only way into the service: the public HTTP API, with a base URL (the same
// server's own address in local mode, --api-url when the gateway runs alone).
import { GATEWAY_PROOF_HEADER, LAUNCHER_TOKEN_HEADER } from '../lib/gateway-proof.js';
import { serverEvents } from '../lib/server-events.js';
import type { ApplicationAttempt, ApplicationConfig } from '../schemas/index.js';

export interface ApiApplication {
  appName: string;
  jobName: string;
  state: string;
  labels?: Record<string, string>;
  stateDetail?: string;
  /** Which attempt of the application's driver the state is about (restartPolicy); absent: 1. */
  attempt?: number;
  /** Every run of its driver so far, oldest first (how each ended, whether it counted). */
  attempts?: ApplicationAttempt[];
  /** Its effective config; the gateway reads restartPolicy (when a retry's driver is due). */
  config?: Pick<ApplicationConfig, 'restartPolicy'>;
  /** The id of the key that submitted it (null with authentication off). */
  submittedBy?: string | null;
}

export interface ApiTemplate {
  name: string;
  config: { pythonVersion?: string; engineVersion?: string; [key: string]: unknown };
}

/** An answer of the API that was not a success: status and message kept for the caller. */
export class ApiError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }
}

export const TERMINAL_STATES = new Set(['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN']);

export class ApiClient {
  /** `baseUrl` may be a function: in local mode the address is known once the server listens. */
  /** `proof`: sent with submissions, which carry kernel labels (lib/gateway-proof.ts). */
  constructor(private readonly base: string | (() => string), private readonly ownKey: string | undefined, private readonly proof?: string) {}

  private get baseUrl(): string {
    return typeof this.base === 'string' ? this.base : this.base();
  }

  private headers(key: string | undefined, json = false): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.proof) headers[GATEWAY_PROOF_HEADER] = this.proof;
    const use = key || this.ownKey;
    if (use) headers['x-api-key'] = use;
    if (json) headers['content-type'] = 'application/json';
    return headers;
  }

  private async call<T>(method: string, path: string, key?: string, body?: unknown, extra: Record<string, string> = {}): Promise<T | undefined> {
    const response = await fetch(new URL(path, this.baseUrl), {
      method,
      headers: { ...this.headers(key, body !== undefined), ...extra },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try { message = (JSON.parse(text) as { message?: string }).message ?? text; } catch { /* plain text */ }
      throw new ApiError(response.status, message);
    }
    return text ? (JSON.parse(text) as T) : undefined;
  }

  async templates(key?: string): Promise<ApiTemplate[]> {
    return (await this.call<{ items: ApiTemplate[] }>('GET', '/api/config-templates/', key))?.items ?? [];
  }

  /** The template, or undefined when it does not exist (only a 404 means absent). */
  async template(name: string, key?: string): Promise<ApiTemplate | undefined> {
    try {
      return await this.call<ApiTemplate>('GET', `/api/config-templates/${encodeURIComponent(name)}`, key);
    } catch (error) {
      if (error instanceof ApiError && error.statusCode === 404) return undefined;
      throw error;
    }
  }

  /** `launcherToken`: a kernel's, sent beside the submission: the API keeps it out of the config (lib/gateway-proof.ts). */
  async submit(submission: Record<string, unknown>, key?: string, launcherToken?: string): Promise<ApiApplication> {
    const extra: Record<string, string> = launcherToken === undefined ? {} : { [LAUNCHER_TOKEN_HEADER]: launcherToken };
    return (await this.call<ApiApplication>('POST', '/api/apps/', key, submission, extra))!;
  }

  /** Records the key (`key`, the claimer's own) as the claimer of a warm pool's kernel (POST /api/apps/{app}/claim, with the proof). */
  async claim(appName: string, key: string): Promise<void> {
    await this.call('POST', `/api/apps/${encodeURIComponent(appName)}/claim`, key);
  }

  /** Every application matching the selector, all pages. */
  async list(labelSelector: string, key?: string): Promise<ApiApplication[]> {
    const items: ApiApplication[] = [];
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ labelSelector, limit: '200', ...(cursor ? { cursor } : {}) });
      const page = await this.call<{ items: ApiApplication[]; next: string | null }>('GET', `/api/apps/?${query}`, key);
      items.push(...(page?.items ?? []));
      cursor = page?.next ?? undefined;
    } while (cursor);
    return items;
  }

  /** Stops and removes the application; an application already gone is not an error. */
  async remove(appName: string, key?: string): Promise<void> {
    try {
      await this.call('DELETE', `/api/apps/${encodeURIComponent(appName)}`, key);
    } catch (error) {
      if (!(error instanceof ApiError && error.statusCode === 404)) throw error;
    }
  }

  /**
   * Follows GET /api/apps/events (server-sent events) until `signal` aborts, resuming with
   * Last-Event-ID after a dropped connection. `onReset` is called when positions were lost.
   */
  async follow(labelSelector: string, onApp: (type: string, app: ApiApplication) => void,
    onReset: () => void, signal: AbortSignal, onError: (error: Error) => void): Promise<void> {
    let lastId: string | undefined;
    while (!signal.aborted) {
      try {
        const headers = this.headers(undefined);
        if (lastId) headers['last-event-id'] = lastId;
        const response = await fetch(new URL(`/api/apps/events?${new URLSearchParams({ labelSelector })}`, this.baseUrl), { headers, signal });
        if (!response.ok || !response.body) throw new ApiError(response.status, `events stream answered ${response.status}`);
        for await (const { event, data, id } of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) {
          if (id) lastId = id;
          if (event === 'reset') onReset();
          else if (event === 'changed' || event === 'deleted') onApp(event, JSON.parse(data) as ApiApplication);
        }
      } catch (error) {
        if (signal.aborted) return;
        onError(error as Error);
      }
      if (!signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
