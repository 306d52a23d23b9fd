// One JSON call to the apiserver without client-node's generated layer, for the two writes
// of every submission (the Application and its driver pod) and the controller's writes. client-node 1.4 runs each call
// through its type model, rxjs-style middleware and node-fetch: about 1 ms of CPU per create
// on this machine against 0.5 ms for the same create as a plain request (bench/kubernetes/
// controller-ceiling.ts measures what a submission costs). Authentication stays client-node's
// own (`applyToHTTPSOptions`: client certificates, tokens, exec plugins, the in-cluster
// token; worked out again every 10 s, not per call), and so is the TLS material: its agent (client.ts). That agent is not kept alive,
// for node-fetch's sake; node:https has no such bug, so these calls go through a kept-alive
// twin of it (same options) and skip a TLS handshake per write. Errors keep the shape
// client-node gives them (`code`, `body`), so errors.ts reads both alike.
import { request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, type Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** An error answer of the apiserver: its HTTP status and its Status object (or text). */
export class KubeApiError extends Error {
  constructor(readonly code: number, readonly body: unknown) {
    super(`HTTP ${code}: ${typeof body === 'object' && body && 'message' in body ? String((body as { message: unknown }).message) : String(body).slice(0, 300)}`);
  }
}

/** Above any object the apiserver returns for one create (etcd caps objects near 1.5 MiB). */
const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** The kept-alive twin of each of client-node's agents (one per KubeConfig, client.ts). */
const keptAlive = new WeakMap<Agent, Agent>();

function keptAliveTwin(shared: Agent | undefined): Agent | undefined {
  if (!shared) return undefined;
  let twin = keptAlive.get(shared);
  if (!twin) keptAlive.set(shared, (twin = new HttpsAgent({ ...shared.options, keepAlive: true, maxSockets: 128 })));
  return twin;
}

/** POSTs `body` as JSON to `path` (with its query) on the current cluster; resolves to the parsed answer. */
export function postJson<T>(kc: KubeConfig, path: string, body: unknown): Promise<T> {
  return sendJson<T>(kc, 'POST', path, body);
}

/** A JSON Patch (RFC 6902) of the object at `path`; aborted with `signal`. */
export function patchJson<T>(kc: KubeConfig, path: string, operations: unknown[], signal?: AbortSignal): Promise<T> {
  return sendJson<T>(kc, 'PATCH', path, operations, { contentType: 'application/json-patch+json', signal });
}

/** Replaces the object at `path` (PUT); aborted with `signal`. */
export function putJson<T>(kc: KubeConfig, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return sendJson<T>(kc, 'PUT', path, body, { signal });
}

/** Deletes the object at `path` with these DeleteOptions (e.g. a uid precondition); aborted with `signal`. */
export function deleteJson<T>(kc: KubeConfig, path: string, options: unknown, signal?: AbortSignal): Promise<T> {
  return sendJson<T>(kc, 'DELETE', path, options, { signal });
}

/**
 * client-node's authentication of a request (headers, TLS material, its agent), worked out
 * again at most every AUTH_REUSE_MS per KubeConfig: working it out costs about 0.25 ms of CPU
 * per call (it decodes the certificates each time), a quarter of a create's own cost. Tokens
 * that rotate (the in-cluster file, exec plugins) are read again as often as client-go does
 * with a token file (it caches one for a minute); ours is shorter.
 */
const AUTH_REUSE_MS = 10_000;
type AuthOptions = Omit<RequestOptions, 'headers'> & { headers: Record<string, string | number> };
const authCache = new WeakMap<KubeConfig, { at: number; options: Promise<AuthOptions> }>();

function authOptions(kc: KubeConfig): Promise<AuthOptions> {
  const now = Date.now();
  let entry = authCache.get(kc);
  if (!entry || now - entry.at >= AUTH_REUSE_MS) {
    const options: AuthOptions = { headers: {} };
    entry = { at: now, options: kc.applyToHTTPSOptions(options as RequestOptions).then(() => options) };
    // A failure is not kept: the next call tries again.
    entry.options.catch(() => authCache.delete(kc));
    authCache.set(kc, entry);
  }
  return entry.options;
}

async function sendJson<T>(kc: KubeConfig, method: string, path: string, body: unknown, { contentType = 'application/json', signal }: { contentType?: string; signal?: AbortSignal } = {}): Promise<T> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no cluster server');
  const url = new URL(path, server);
  const payload = JSON.stringify(body);
  const auth = await authOptions(kc);
  const options: AuthOptions = {
    ...auth,
    method,
    headers: { ...auth.headers, 'content-type': contentType, accept: 'application/json', 'content-length': Buffer.byteLength(payload) },
    ...(signal ? { signal } : {}),
  };
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<T>((ok, fail) => {
    const agent = url.protocol === 'https:' ? keptAliveTwin(options.agent as Agent | undefined) : undefined;
    const req = send(url, { ...options, agent }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_RESPONSE_BYTES) { res.destroy(new Error(`the apiserver's answer to ${method} ${url.pathname} is above ${MAX_RESPONSE_BYTES} bytes`)); return; }
        chunks.push(chunk);
      });
      res.once('error', fail);
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try { parsed = JSON.parse(text); } catch { /* a proxy's plain-text answer: kept as text */ }
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) ok(parsed as T);
        else fail(new KubeApiError(status, parsed));
      });
    });
    req.once('error', fail);
    req.end(payload);
  });
}
