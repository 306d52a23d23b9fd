// The server's one `upgrade` listener. Node hands every request with `Upgrade:` to it, and a
// socket it neither answers nor closes is never closed by anyone (the HTTP server's timeouts
// stop at the upgrade): 1,100 stray upgrades left 1,023 sockets in CLOSE_WAIT and the process
// out of file descriptors. So every upgrade is answered here or by the handler it is given to,
// a handshake not finished in time is cut, and upgrades meet the same Host allowlist as HTTP
// plus an Origin check (a browser page of another site may open a websocket to any address).
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { hostName } from '../submit-api/host-allowlist.js';

export interface UpgradeGuardOptions {
  /** Host names served (the HTTP allowlist's, set while auth is off); undefined: any. */
  allowedHosts?: string[];
  /**
   * Origins (`https://notebooks.example.com`) whose pages may open websockets, besides the
   * service's own (an Origin whose host is the request's Host); `*`: any. A request without
   * Origin (not a browser: the Jupyter server, launchers) passes.
   */
  allowedOrigins?: string[];
  /** An upgrade neither refused nor turned into a websocket within this is closed. */
  handshakeTimeoutMs?: number;
  log: FastifyBaseLogger;
}

export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

const REASONS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' };

/** Answers an upgrade with a JSON error (Jupyter's `{reason, message}`) and closes the socket once it is written. */
export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  const reason = REASONS[status] ?? 'Error';
  const body = JSON.stringify({ reason, message });
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // The server's sockets are half-open capable: ending our side is not enough when the peer
  // never closes its own, so the socket is destroyed as soon as the answer is flushed.
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Why an upgrade's Origin is refused, or undefined when it may go on. */
export function originRefusal(request: IncomingMessage, allowed: string[] = []): string | undefined {
  return !foreignOrigin(request, allowed) ? undefined : `websockets from pages of ${request.headers.origin} are not accepted (${allowedList(allowed)})`;
}

/**
 * Why a gateway HTTP request is refused as cross-site, or undefined when it may go on: the same
 * rule as websockets. With authentication off (local mode's default) any web page could start
 * kernels with a form or a text/plain POST, which needs no preflight; browsers send Origin
 * with every such request, and Jupyter's own clients (not browsers) send none.
 */
export function crossSiteRefusal(request: IncomingMessage, allowed: string[] = []): string | undefined {
  return !foreignOrigin(request, allowed) ? undefined : `requests from pages of ${request.headers.origin} are not accepted (${allowedList(allowed)})`;
}

const allowedList = (allowed: string[]) => `the allowed origins: this service's own${allowed.length ? `, ${allowed.join(', ')}` : ''}; --allowed-origins`;

/** Whether the request comes from a browser page of another origin than this service's or an allowed one. */
function foreignOrigin(request: IncomingMessage, allowed: string[]): boolean {
  const origin = request.headers.origin;
  if (origin === undefined || allowed.includes('*')) return false;
  const normalized = origin.trim().toLowerCase().replace(/\/$/, '');
  if (allowed.some((entry) => entry.trim().toLowerCase().replace(/\/$/, '') === normalized)) return false;
  let host: string | undefined;
  try { host = new URL(normalized).host; } catch { host = undefined; } // `null` (sandboxed pages, files): no host
  return host === undefined || host !== (request.headers.host ?? '').trim().toLowerCase();
}

/** Makes `serve` the server's upgrade handler behind the checks above; returns the function that detaches it. */
export function guardUpgrades(server: Server, options: UpgradeGuardOptions, serve: UpgradeHandler): () => void {
  const hosts = options.allowedHosts && new Set(options.allowedHosts.map((name) => hostName(name)));
  const timeoutMs = options.handshakeTimeoutMs ?? 10_000;
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', (error) => options.log.debug({ err: error }, 'upgrade socket error'));
    // ws turns the timeout off (setTimeout(0)) once the socket is a websocket.
    if ('setTimeout' in socket && typeof socket.setTimeout === 'function') {
      (socket as Duplex & { setTimeout(ms: number, cb: () => void): void }).setTimeout(timeoutMs, () => socket.destroy());
    }
    if (hosts && !hosts.has('*') && !hosts.has(hostName(request.headers.host ?? ''))) {
      return refuseUpgrade(socket, 403, `requests for host "${hostName(request.headers.host ?? '')}" are not served (--allowed-hosts)`);
    }
    const refusal = originRefusal(request, options.allowedOrigins);
    if (refusal) return refuseUpgrade(socket, 403, refusal);
    try {
      serve(request, socket, head);
    } catch (error) {
      options.log.error({ err: error }, 'upgrade handler failed');
      refuseUpgrade(socket, 500, 'the upgrade failed; the service log has the details');
    }
  };
  server.on('upgrade', onUpgrade);
  return () => { server.off('upgrade', onUpgrade); };
}
