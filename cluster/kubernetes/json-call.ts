// One JSON call to the apiserver without client-node's generated layer, for the two writes
// of every submission (the Application and its driver pod) and the controller's writes. client-node 1.4 runs each call
// through its type model, rxjs-style middleware and node-fetch: about 1 ms of CPU per create
// on this machine against 0.5 ms for the same create as a plain request (bench/kubernetes/
// controller-ceiling.ts measures what a submission costs). The request itself (credentials,
// TLS, the kept-alive agent, the kubeconfig's proxy) is the module's (apiserver.ts). Errors
// keep the shape client-node gives them (`code`, `body`), so errors.ts reads both alike.
import type { KubeConfig } from '@kubernetes/client-node';
import { parseApiJson } from './api-json.js';
import { connectionOf, KubeApiError } from './apiserver.js';

export { KubeApiError };

/** Above any object the apiserver returns for one create (etcd caps objects near 1.5 MiB). */
const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** GETs the object at `path`; aborted with `signal`. */
export function getJson<T>(kc: KubeConfig, path: string, signal?: AbortSignal): Promise<T> {
  return sendJson<T>(kc, 'GET', path, undefined, { signal });
}

/** POSTs `body` as JSON to `path` (with its query) on the current cluster; resolves to the parsed answer; aborted with `signal`. */
export function postJson<T>(kc: KubeConfig, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return sendJson<T>(kc, 'POST', path, body, { signal });
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

async function sendJson<T>(kc: KubeConfig, method: string, path: string, body: unknown, { contentType = 'application/json', signal }: { contentType?: string; signal?: AbortSignal } = {}): Promise<T> {
  // A GET has no body, so no content headers.
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const res = await connectionOf(kc).request({
    method, path, body: payload, signal,
    headers: payload === undefined ? { accept: 'application/json' }
      : { 'content-type': contentType, accept: 'application/json', 'content-length': Buffer.byteLength(payload) },
  });
  return new Promise<T>((ok, fail) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_RESPONSE_BYTES) { res.destroy(new Error(`the apiserver's answer to ${method} ${path.split('?')[0]} is above ${MAX_RESPONSE_BYTES} bytes`)); return; }
      chunks.push(chunk);
    });
    res.once('error', fail);
    res.once('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown = text;
      // Without the object's managedFields, which no caller reads (api-json.ts).
      try { parsed = parseApiJson(text); } catch { /* a proxy's plain-text answer: kept as text */ }
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) ok(parsed as T);
      else fail(new KubeApiError(status, parsed));
    });
  });
}

/** RFC 6901: `~` and `/` in a key are escaped in a JSON pointer (a label's or annotation's key in a patch path). */
export const pointerKey = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
