// Agents that reach the apiserver through an HTTP proxy with CONNECT (a kubeconfig's
// `proxy-url`, as kubectl honours it): each new socket is a tunnel the proxy opens to the
// apiserver, and TLS (client certificate, CA check) still runs end to end inside it, so the
// proxy sees only where the client goes. Plain node agents otherwise: keep-alive, socket
// limits and TLS session reuse are node's own (the https agent's createConnection is given
// the tunnelled socket to wrap).
import { Agent as HttpAgent, type AgentOptions as HttpAgentOptions, type ClientRequestArgs, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions, request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';

type Done = (error: Error | null, socket?: Duplex) => void;

/** A proxy that did not open the tunnel: a network failure to our callers (errors.ts). */
export class ProxyTunnelError extends Error {
  readonly code = 'EPROXYTUNNEL';
}

/** Asks `proxy` for a tunnel to host:port; `done` gets the raw socket (or why not). */
export function openTunnel(proxy: URL, host: string, port: number, done: Done): void {
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const headers: Record<string, string> = { host: target };
  if (proxy.username) {
    const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  const send = proxy.protocol === 'https:' ? httpsRequest : httpRequest;
  const request = send({
    host: proxy.hostname.replace(/^\[|\]$/g, ''), port: proxy.port || (proxy.protocol === 'https:' ? 443 : 80),
    method: 'CONNECT', path: target, headers, agent: false,
  });
  request.once('connect', (response, socket, head) => {
    if (response.statusCode !== 200) {
      socket.destroy();
      done(new ProxyTunnelError(`the proxy ${proxy.host} refused a tunnel to ${target} (HTTP ${response.statusCode})`));
      return;
    }
    if (head.length > 0) socket.unshift(head);
    done(null, socket);
  });
  request.once('error', (error) => done(error));
  request.end();
}

function portOf(options: ClientRequestArgs, fallback: number): number {
  return Number(options.port ?? fallback);
}

function hostOf(options: ClientRequestArgs): string {
  return options.host ?? options.hostname ?? 'localhost';
}

/** An https agent whose sockets are CONNECT tunnels through `proxy`. */
export class HttpsTunnelAgent extends HttpsAgent {
  constructor(private readonly proxy: URL, options: HttpsAgentOptions) {
    super(options);
  }

  override createConnection(options: ClientRequestArgs, done: Done): undefined {
    openTunnel(this.proxy, hostOf(options), portOf(options, 443), (error, socket) => {
      if (error || !socket) { done(error ?? new ProxyTunnelError('no tunnel')); return; }
      // node's own TLS connect (session cache included), over the tunnel.
      const create = HttpsAgent.prototype.createConnection as unknown as (this: HttpsAgent, options: object) => Duplex;
      done(null, create.call(this, { ...options, socket }));
    });
    return undefined;
  }
}

/** An http agent (an apiserver on plain http) whose sockets are CONNECT tunnels through `proxy`. */
export class HttpTunnelAgent extends HttpAgent {
  constructor(private readonly proxy: URL, options: HttpAgentOptions) {
    super(options);
  }

  override createConnection(options: ClientRequestArgs, done: Done): undefined {
    openTunnel(this.proxy, hostOf(options), portOf(options, 80), done);
    return undefined;
  }
}
