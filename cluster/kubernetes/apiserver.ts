// The apiserver client module's transport: every call to the apiserver, through client-node or
// as a plain request (json-call.ts, log-request.ts), takes its agent, TLS material and
// credentials from here, one connection per KubeConfig.
// - Authentication is client-node's own (client certificates, tokens, exec plugins, the
//   in-cluster token), asked through its public `applyToHTTPSOptions` and reused for
//   AUTH_REUSE_MS (working it out decodes the certificates: 0.25 ms of CPU per call).
// - Two agents with the same TLS material: one for client-node's node-fetch, not kept alive
//   (node-fetch 2 takes a reused socket's next response for a cut one: "Premature close",
//   node-fetch issue 1767), one kept alive for the plain calls. Both shared, so TLS sessions are
//   resumed (a full handshake costs 8 ms against 2.8 ms on a kept-alive connection here).
// - A kubeconfig's `proxy-url` (http:// or https://) is honoured by both: sockets are CONNECT
//   tunnels (connect-tunnel.ts). A socks proxy is refused at start, saying so.
// client-node is handed our agent through public methods only (ServiceKubeConfig below), so
// no library internal is patched; test/unit/library-pins.test.ts checks that its calls still
// go through them.
import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions, request as httpsRequest, type RequestOptions } from 'node:https';
import type { Agent } from 'node:http';
import { createSecureContext } from 'node:tls';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { HttpsTunnelAgent, HttpTunnelAgent } from './connect-tunnel.js';

/** An error answer of the apiserver: its HTTP status and its Status object (or text), the shape client-node gives its errors. */
export class KubeApiError extends Error {
  constructor(readonly code: number, readonly body: unknown) {
    super(`HTTP ${code}: ${typeof body === 'object' && body && 'message' in body ? String((body as { message: unknown }).message) : String(body).slice(0, 300)}`);
  }
}

const AUTH_REUSE_MS = 10_000;
const MAX_SOCKETS = 128;
const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

export type AuthOptions = Omit<RequestOptions, 'headers'> & { headers: Record<string, string | number> };

export interface ApiRequest {
  method: string;
  /** Path and query, resolved against the cluster's server. */
  path: string;
  body?: string;
  headers?: Record<string, string | number>;
  signal?: AbortSignal;
}

/** The proxy of a kubeconfig's cluster, checked: only HTTP CONNECT proxies. */
export function proxyOf(proxyUrl: string | undefined): URL | undefined {
  if (!proxyUrl) return undefined;
  const proxy = new URL(proxyUrl);
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new Error(`the kubeconfig's proxy-url ${proxy.protocol}//${proxy.host} is not supported: use an http:// or https:// proxy (HTTP CONNECT)`);
  }
  return proxy;
}

export class ApiserverConnection {
  readonly server: URL;
  readonly proxy?: URL;
  private auth?: { at: number; options: Promise<AuthOptions> };
  private agents?: Promise<{ fetch: Agent; plain: Agent }>;

  /** The server's host as a request names it (an IPv6 address without its brackets). */
  private readonly host: string;
  /** A server URL's own path (a proxy in front of the apiserver), before every request's path. */
  private readonly pathPrefix: string;

  constructor(private readonly kc: KubeConfig) {
    const cluster = kc.getCurrentCluster();
    if (!cluster?.server) throw new Error('the kubeconfig names no cluster server');
    this.server = new URL(cluster.server);
    this.host = this.server.hostname.replace(/^\[(.*)\]$/, '$1');
    this.pathPrefix = this.server.pathname.replace(/\/+$/, '');
    this.proxy = proxyOf(cluster.proxyUrl);
  }

  /** Headers and TLS material of a request, from client-node's authentication (reused for AUTH_REUSE_MS). */
  authOptions(): Promise<AuthOptions> {
    const now = Date.now();
    if (!this.auth || now - this.auth.at >= AUTH_REUSE_MS) {
      const options: AuthOptions = { headers: {} };
      // KubeConfig's own method, not ServiceKubeConfig's (which asks for our agent).
      const entry = { at: now, options: KubeConfig.prototype.applyToHTTPSOptions.call(this.kc, options as RequestOptions).then(() => options) };
      entry.options.catch(() => { if (this.auth === entry) this.auth = undefined; }); // a failure is tried again next call
      this.auth = entry;
    }
    return this.auth.options;
  }

  /** The agent of client-node's calls (not kept alive). */
  async fetchAgent(): Promise<Agent> {
    return (await this.sharedAgents()).fetch;
  }

  /**
   * One request with our credentials on the kept-alive agent; resolves to the response, whatever its status.
   * The TLS material is the agent's (it was built from the same authentication): given per
   * request too, Node's agent would decode the certificates into each request's pool key, and
   * hash that long key at every lookup, on every call.
   */
  async request({ method, path, body, headers, signal }: ApiRequest): Promise<IncomingMessage> {
    const [auth, { plain }] = await Promise.all([this.authOptions(), this.sharedAgents()]);
    const https = this.server.protocol === 'https:';
    const send = https ? httpsRequest : httpRequest;
    const options: RequestOptions = {
      protocol: this.server.protocol, hostname: this.host, port: this.server.port || (https ? 443 : 80), path: this.pathPrefix + path,
      agent: plain, method, headers: { ...auth.headers, ...headers }, ...(signal ? { signal } : {}),
    };
    return new Promise<IncomingMessage>((ok, fail) => {
      const req = send(options, ok);
      req.once('error', fail);
      req.end(body);
    });
  }

  private sharedAgents(): Promise<{ fetch: Agent; plain: Agent }> {
    this.agents ??= this.authOptions().then((auth) => {
      const tls: AgentOptions = {};
      for (const field of TLS_FIELDS) if (auth[field] !== undefined) (tls as Record<string, unknown>)[field] = auth[field];
      const shared = this.server.protocol === 'https:' ? oneSecureContext(tls) : tls;
      return { fetch: this.agent(shared, false), plain: this.agent(shared, true) };
    });
    this.agents.catch(() => { this.agents = undefined; });
    return this.agents;
  }

  private agent(tls: AgentOptions, keepAlive: boolean): Agent {
    const options = { ...tls, keepAlive, maxSockets: MAX_SOCKETS };
    const https = this.server.protocol === 'https:';
    if (this.proxy) return https ? new HttpsTunnelAgent(this.proxy, options) : new HttpTunnelAgent(this.proxy, options);
    return https ? new HttpsAgent(options) : new HttpAgent(options);
  }
}

/**
 * The TLS options of both agents with the CA, certificate and key made into one SecureContext:
 * given them as text, node parses them into a new context for every connection (client-node's
 * calls, such as the Lease's renewals, open one each; its agent is not kept alive).
 */
function oneSecureContext(tls: AgentOptions): AgentOptions {
  const { ca, cert, key, pfx, passphrase, ...rest } = tls;
  return { ...rest, secureContext: createSecureContext({ ca, cert, key, pfx, passphrase }) };
}

const connections = new WeakMap<KubeConfig, ApiserverConnection>();

/** The one connection of this KubeConfig (built on first use). */
export function connectionOf(kc: KubeConfig): ApiserverConnection {
  let connection = connections.get(kc);
  if (!connection) connections.set(kc, (connection = new ApiserverConnection(kc)));
  return connection;
}

/**
 * A KubeConfig whose client-node calls use this module's agents: generated API calls ask
 * `applySecurityAuthentication`, Watch, Log, Exec and informers `applyToHTTPSOptions`
 * (through `applyToFetchOptions`). Both are public methods, overridden.
 */
export class ServiceKubeConfig extends KubeConfig {
  override async applyToHTTPSOptions(opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0]): Promise<void> {
    await super.applyToHTTPSOptions(opts);
    (opts as RequestOptions).agent = await connectionOf(this).fetchAgent();
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    context.setAgent(await connectionOf(this).fetchAgent());
  }
}
