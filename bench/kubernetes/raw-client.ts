// The apiserver with no client library: node:https on kept-alive connections with the
// kubeconfig's client certificate, key and CA. What a create costs the apiserver itself,
// with the client adding as little as possible (webhook-latency.ts, controller-ceiling.ts).
import { Agent, request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface RawClient { agent: Agent; host: string; port: number; cert: Buffer; key: Buffer; ca: Buffer }

/** One keep-alive agent for up to `maxSockets` connections in flight. */
export function rawClient(kc: KubeConfig, maxSockets: number): RawClient {
  const user = kc.getCurrentUser()!;
  const cluster = kc.getCurrentCluster()!;
  const url = new URL(cluster.server);
  const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64');
  return {
    agent: new Agent({ keepAlive: true, maxSockets }),
    host: url.hostname, port: Number(url.port),
    cert: b64(user.certData), key: b64(user.keyData), ca: b64(cluster.caData),
  };
}

/** One request; a body makes it a JSON POST, none a GET. */
export function send(raw: RawClient, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((ok, fail) => {
    const req = request({
      host: raw.host, port: raw.port, path, method: body === undefined ? 'GET' : 'POST', agent: raw.agent, cert: raw.cert, key: raw.key, ca: raw.ca,
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), accept: 'application/json' },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: text }));
    });
    req.once('error', fail);
    req.end(body);
  });
}
