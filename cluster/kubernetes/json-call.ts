// One JSON call to the apiserver without client-node's generated layer, for the two writes
// of every submission (the Application and its driver pod). client-node 1.4 runs each call
// through its type model, rxjs-style middleware and node-fetch: about 1 ms of CPU per create
// on this machine against 0.5 ms for the same create as a plain request (bench/kubernetes/
// controller-ceiling.ts measures what a submission costs). Authentication stays client-node's
// own (`applyToHTTPSOptions`: client certificates, tokens, exec plugins, the in-cluster
// token), and so is the TLS material: its agent (client.ts). That agent is not kept alive,
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
export async function postJson<T>(kc: KubeConfig, path: string, body: unknown): Promise<T> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no cluster server');
  const url = new URL(path, server);
  const payload = JSON.stringify(body);
  const options: RequestOptions & { headers: Record<string, string | number> } = {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(payload) },
  };
  await kc.applyToHTTPSOptions(options);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<T>((ok, fail) => {
    const agent = url.protocol === 'https:' ? keptAliveTwin(options.agent as Agent | undefined) : undefined;
    const req = send(url, { ...options, agent }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_RESPONSE_BYTES) { res.destroy(new Error(`the apiserver's answer to POST ${url.pathname} is above ${MAX_RESPONSE_BYTES} bytes`)); return; }
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
