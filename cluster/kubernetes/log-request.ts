// One container's log as a plain HTTP response from the apiserver, for the log archive's
// follower. client-node's Log helper pipes its response into the caller's stream, and a pipe
// does not pass errors on: a follow stream cut mid-run (an apiserver restarting) would look
// like a log that stopped. Here a cut connection is an error on the response, and the caller
// tells a clean end from a broken one. The request (credentials, TLS, agent, the kubeconfig's
// proxy) is the module's (apiserver.ts).
import type { IncomingMessage } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { connectionOf, KubeApiError } from './apiserver.js';

export interface PodLogQuery {
  namespace: string;
  pod: string;
  container?: string;
  follow?: boolean;
  /** Only the last N lines (the end check of a followed log). */
  tailLines?: number;
  /** Each line starts with its time (RFC3339 with nanoseconds) and a space. */
  timestamps?: boolean;
  /** Only lines of this time (RFC3339, whole seconds) on. */
  sinceTime?: string;
  signal?: AbortSignal;
}

/** Error answers are read up to this much, for their message. */
const MAX_ERROR_BYTES = 64 * 1024;

/** Resolves to the response once the apiserver answered 200; any other answer is a KubeApiError. */
export async function openPodLog(kc: KubeConfig, query: PodLogQuery): Promise<IncomingMessage> {
  const url = new URL(`/api/v1/namespaces/${encodeURIComponent(query.namespace)}/pods/${encodeURIComponent(query.pod)}/log`, 'http://apiserver');
  if (query.container) url.searchParams.set('container', query.container);
  if (query.follow) url.searchParams.set('follow', 'true');
  if (query.tailLines !== undefined) url.searchParams.set('tailLines', String(query.tailLines));
  if (query.timestamps) url.searchParams.set('timestamps', 'true');
  if (query.sinceTime !== undefined) url.searchParams.set('sinceTime', query.sinceTime);
  const res = await connectionOf(kc).request({ method: 'GET', path: `${url.pathname}${url.search}`, signal: query.signal });
  return new Promise<IncomingMessage>((ok, fail) => {
    const status = res.statusCode ?? 0;
    if (status === 200) { ok(res); return; }
    // 204: the apiserver knows no node to ask (the pod is not bound): no log to read, as client-node says too.
    if (status === 204) { res.resume(); fail(new KubeApiError(status, `no log of ${query.pod} to read (the apiserver answered 204: no node serves it)`)); return; }
    const chunks: Buffer[] = [];
    let bytes = 0;
    res.on('data', (chunk: Buffer) => { if ((bytes += chunk.length) <= MAX_ERROR_BYTES) chunks.push(chunk); });
    res.once('error', fail);
    res.once('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try { body = JSON.parse(text); } catch { /* plain text */ }
      fail(new KubeApiError(status, body));
    });
  });
}
