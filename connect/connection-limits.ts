// What one client may hold of the Spark Connect endpoint. The endpoint is a server of its own
// (HTTP/2, on by default, reachable without a key until a call is read), in the process that
// also serves the API: without these, idle connections from one anonymous address could take
// every file descriptor the API and the drivers' logs need. So, as the API's HTTP server does
// (lib/fd-limit.ts, lib/address-cap.ts): a cap on connections in all, one per client address,
// a connection with no call open is closed after a while, and one key holds a bounded number of
// open calls (a session's client keeps a few: an execute stream, a config call, a release).
import type { Http2SecureServer, Http2Server, Http2Session } from 'node:http2';
import { capConnectionsPerAddress, defaultPerAddress } from '../lib/address-cap.js';
import { connectionBudget } from '../lib/fd-limit.js';

export interface ConnectLimits {
  /** Connections the endpoint holds at most. */
  maxConnections: number;
  /** Connections one client address (an IPv6 /64) holds at most; 0: no cap (behind a proxy). */
  perAddress: number;
  /** A connection without an open call is closed after this long (the client reconnects when it needs to). */
  idleMs: number;
  /** Calls one key has open at once; one more is refused with RESOURCE_EXHAUSTED. */
  callsPerKey: number;
}

/**
 * An eighth of the process's connection budget (the API keeps its own), an address a quarter of
 * that; five idle minutes (Spark's Python client reconnects on its own); 64 calls per key, well
 * above the few a client keeps open per session.
 */
export function defaultConnectLimits(budget = connectionBudget()): ConnectLimits {
  const maxConnections = Math.max(16, Math.floor(budget / 8));
  return { maxConnections, perAddress: defaultPerAddress(maxConnections), idleMs: 5 * 60_000, callsPerKey: 64 };
}

/** Closes `session` after `idleMs` without activity while it has no call open. */
function closeWhenIdle(session: Http2Session, idleMs: number): void {
  let open = 0;
  session.on('stream', (stream) => {
    open++;
    stream.once('close', () => { open--; });
  });
  session.setTimeout(idleMs, () => {
    if (open === 0 && !session.closed) session.close();
  });
}

/** Applies the connection limits to the endpoint's server (calls per key are the endpoint's own). */
export function limitConnections(server: Http2Server | Http2SecureServer, limits: ConnectLimits): void {
  server.maxConnections = limits.maxConnections;
  // An HTTP/1.1 answer means nothing to a gRPC client: the connection over the cap is just closed.
  capConnectionsPerAddress(server, limits.perAddress, (socket) => socket.destroy());
  if (limits.idleMs > 0) server.on('session', (session: Http2Session) => closeWhenIdle(session, limits.idleMs));
}
