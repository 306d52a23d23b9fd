// The webhook's HTTPS transport, and only that: TLS with certificates reloaded from
// files, a capped body, health endpoints. Admission itself is the `admit` function the
// caller binds to its context (rules, template and application caches).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { recordReview } from './admission-record.js';
import { watchCertificates } from './certificate-watcher.js';
import { deny } from './envelope.js';
import { readBody, sendJson } from './http-io.js';
import type { Drain } from '../../lib/drain.js';
import { type AdmitFunction, type ReviewResult, reviewAdmission, reviewText, uidFromText } from './review.js';

export const MUTATE_PATH = '/mutate-pods';
/** Above what the apiserver itself sends (objects are capped near 1.5 MiB by etcd). */
export const DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024;

export interface WebhookServerOptions {
  port?: number;
  host?: string;
  certFile: string;
  keyFile: string;
  admit: AdmitFunction;
  maxBodyBytes?: number;
  /** How often the certificate files are re-read at the latest. */
  certReloadIntervalMs?: number;
  /**
   * Awaited before the (synchronous) admission with the parsed review: the place to fill a
   * cache miss (a template created a moment ago) with one GET. Bounded by prepareTimeoutMs.
   */
  prepare?: (review: unknown) => Promise<void>;
  prepareTimeoutMs?: number;
  /** Readiness beyond "serving", e.g. caches synced. */
  ready?: () => boolean;
  /** Tracks requests, so that a shutdown can drain them first (lib/drain.ts). */
  drain?: Drain;
  onReview?: (result: ReviewResult, durationMs: number) => void;
  /** Each admission is logged here (uid, app, outcome); metrics are kept whether or not. */
  logger?: Logger;
  onEvent?: (event: { type: 'cert-reloaded' | 'cert-error' | 'request-error'; message: string }) => void;
}

export interface WebhookServer {
  url: string;
  /** Re-reads the certificate files now; true when a new pair is served. */
  reloadCertificates(): Promise<boolean>;
  close(): Promise<void>;
}

function tooLarge(res: ServerResponse, head: string, bytes: number, limit: number): void {
  const uid = uidFromText(head);
  const message = `AdmissionReview of ${bytes} bytes is above the ${limit} byte limit`;
  // With a uid the apiserver gets a proper denial it can show; without one, plain HTTP 413.
  if (uid) sendJson(res, 200, deny(uid, 413, message));
  else sendJson(res, 413, { message });
}

async function mutate(req: IncomingMessage, res: ServerResponse, options: WebhookServerOptions): Promise<void> {
  if (req.method !== 'POST') return sendJson(res, 405, { message: `use POST on ${MUTATE_PATH}` }, { allow: 'POST' });
  if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
    req.resume();
    return sendJson(res, 415, { message: 'an AdmissionReview is sent as application/json' });
  }
  const limit = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const body = await readBody(req, limit);
  if (!body.ok) return tooLarge(res, body.head, body.bytes, limit);
  const started = performance.now();
  const result = options.prepare ? await prepared(body.text, options) : reviewText(body.text, options.admit);
  sendJson(res, 200, result.review);
  const durationMs = performance.now() - started;
  recordReview(result, durationMs, options.logger);
  options.onReview?.(result, durationMs);
}

async function prepared(text: string, options: WebhookServerOptions) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return reviewText(text, options.admit); // answers the malformed body with its uid
  }
  const limitMs = options.prepareTimeoutMs ?? 2000;
  let timer: NodeJS.Timeout | undefined;
  let late = false;
  const limit = new Promise<void>((ok) => { timer = setTimeout(() => { late = true; ok(); }, limitMs); });
  // A lookup that failed for any reason but "absent" (an RBAC 403, a timeout) must not turn
  // into "template not found", and neither may one that has not answered in time (admission
  // would go on with the miss: a template that exists reported absent, an executor let
  // through unsized). Both are logged, and the review is denied with 503 (the apiserver's
  // caller retries later); a late answer still fills the cache for the next review.
  let failure: unknown;
  const fill = options.prepare!(parsed).then(() => { late = false; }, (error: unknown) => {
    failure = error;
    options.logger?.warn({ err: error, uid: uidFromText(text) }, 'cache fill before admission failed');
  });
  await Promise.race([fill, limit]);
  clearTimeout(timer);
  if (late && failure === undefined) {
    failure = new Error(`the lookup did not answer within ${limitMs} ms (the apiserver is slow or unreachable)`);
    options.logger?.warn({ uid: uidFromText(text) }, `cache fill before admission did not answer within ${limitMs} ms`);
  }
  if (failure !== undefined) {
    const uid = uidFromText(text);
    const message = failure instanceof Error ? failure.message : String(failure);
    const result: ReviewResult = { review: deny(uid, 503, `admission could not read what it decides from: ${message}`), outcome: 'failed', detail: message, uid, error: failure };
    return result;
  }
  return reviewAdmission(parsed, options.admit);
}

function route(req: IncomingMessage, res: ServerResponse, options: WebhookServerOptions): Promise<void> | void {
  const path = (req.url ?? '/').split('?')[0];
  if (path === MUTATE_PATH) return mutate(req, res, options);
  req.resume();
  if (path === '/healthz') return sendJson(res, 200, { status: 'ok' });
  if (path === '/readyz') {
    const ready = options.ready?.() ?? true;
    return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
  }
  return sendJson(res, 404, { message: `no route ${path}` });
}

const urlHost = (address: string) =>
  address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address.includes(':') ? `[${address}]` : address;

/** Starts serving; rejects when the certificate files are missing or do not match. */
export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const report = options.onEvent ?? (() => undefined);
  let server: ReturnType<typeof createServer> | undefined;
  const certs = await watchCertificates({
    certFile: options.certFile,
    keyFile: options.keyFile,
    intervalMs: options.certReloadIntervalMs,
    // New handshakes get the new pair; open connections finish on the old one.
    onReload: (pair) => {
      server?.setSecureContext(pair);
      report({ type: 'cert-reloaded', message: `serving certificate reloaded from ${options.certFile}` });
    },
    onError: (error) => report({ type: 'cert-error', message: `certificate files not loaded, previous pair kept: ${error.message}` }),
  });
  server = createServer({ ...certs.current(), minVersion: 'TLSv1.2' }, (req, res) => {
    Promise.resolve(route(req, res, options)).catch((error: Error) => {
      report({ type: 'request-error', message: error.message });
      if (!res.headersSent) sendJson(res, 500, { message: 'webhook transport error' });
      else res.destroy();
    });
  });
  options.drain?.attach(server);
  // The apiserver keeps connections alive; closing them first invites resets on reuse.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const listening = server;
  await new Promise<void>((resolve, reject) => {
    listening.once('error', reject);
    listening.listen(options.port ?? 8443, options.host ?? '0.0.0.0', () => resolve());
  });
  const { address, port } = listening.address() as AddressInfo;
  return {
    url: `https://${urlHost(address)}:${port}`,
    reloadCertificates: () => certs.check(),
    close: () => new Promise<void>((resolve) => {
      certs.close();
      listening.close(() => resolve());
      listening.closeIdleConnections();
    }),
  };
}
