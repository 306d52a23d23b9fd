// The Spark Connect endpoint: an HTTP/2 (gRPC) server in front of the sessions' Connect
// servers. Each call is authenticated by its bearer token against the service's keys, tied to
// its session by the session id in its first message, and relayed to that session's server,
// started at its first call. Refusals are gRPC statuses, decided before anything is done.
import { createSecureServer, createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { ConnectionSlots, connectionOwner } from '../lib/connection-slots.js';
import type { KeyVerifier } from '../submit-api/auth/plugin.js';
import { type ConnectLimits, defaultConnectLimits, limitConnections } from './connection-limits.js';
import { answerStatus, GrpcRefusal, GrpcStatus } from './grpc-status.js';
import { bearerToken, templateOf } from './metadata.js';
import { CONNECTION_WINDOW, relay, serverAuthorization, STREAM_WINDOW, type Upstreams } from './relay.js';
import { type ConnectCaller } from './session-owners.js';
import { peekSessionId } from './session-id.js';
import type { ConnectSessions } from './sessions.js';

export interface ConnectAuth { enabled: boolean; store: KeyVerifier }

export interface ConnectEndpointOptions {
  auth: ConnectAuth;
  sessions: ConnectSessions;
  log: FastifyBaseLogger;
  /** PEM certificate and key: the endpoint serves TLS (clients to any host but `localhost` need it). */
  tls?: { cert: string; key: string };
  /** Connections and calls one client may hold (connection-limits.ts); defaults from the process's descriptors. */
  limits?: ConnectLimits;
}

/** The caller of a call, or the refusal (UNAUTHENTICATED) when its key is missing or not valid. */
export function authenticateCall(auth: ConnectAuth, headers: IncomingHttpHeaders): ConnectCaller {
  const key = bearerToken(headers);
  if (!auth.enabled) return { id: null, key };
  if (!key) throw new GrpcRefusal(GrpcStatus.UNAUTHENTICATED, 'An API key is required: connect with sc://HOST:PORT/;token=YOUR_KEY (or set SPARK_CONNECT_AUTHENTICATE_TOKEN)');
  const identity = auth.store.verify(key);
  if (!identity) throw new GrpcRefusal(GrpcStatus.UNAUTHENTICATED, 'The API key is not valid (unknown or revoked)');
  return { id: identity.id, key };
}

interface ReadHead { head: Buffer[]; bodyEnded: boolean; sessionId: string }

/** Reads the call's body until its session id is known, then pauses it (the bytes read are relayed first). */
function readSessionId(stream: ServerHttp2Stream): Promise<ReadHead> {
  return new Promise((resolve, reject) => {
    const head: Buffer[] = [];
    let bodyEnded = false;
    const decide = () => {
      const peek = peekSessionId(Buffer.concat(head));
      if (peek.kind === 'more' && !bodyEnded) return;
      stream.off('data', onData).off('end', onEnd).off('close', onClose);
      stream.pause();
      if (peek.kind === 'found') resolve({ head, bodyEnded, sessionId: peek.sessionId });
      else reject(new GrpcRefusal(GrpcStatus.INVALID_ARGUMENT, peek.kind === 'invalid' ? peek.message : 'session_id: the request has no session id'));
    };
    const onData = (chunk: Buffer) => { head.push(chunk); decide(); };
    const onEnd = () => { bodyEnded = true; decide(); };
    const onClose = () => reject(new GrpcRefusal(GrpcStatus.UNAVAILABLE, 'the call was cancelled'));
    stream.on('data', onData).on('end', onEnd).once('close', onClose);
  });
}

/** The calls open per key id: a revoked key's are ended at once. */
type OpenCalls = Map<string, Set<ServerHttp2Stream>>;

function trackCall(open: OpenCalls, keyId: string, stream: ServerHttp2Stream): void {
  const calls = open.get(keyId) ?? new Set<ServerHttp2Stream>();
  open.set(keyId, calls.add(stream));
  stream.once('close', () => {
    calls.delete(stream);
    if (calls.size === 0 && open.get(keyId) === calls) open.delete(keyId);
  });
}

/** When a key is revoked: its open calls end with UNAUTHENTICATED (or are reset mid-answer), its sessions are stopped. */
function watchRevocations(options: ConnectEndpointOptions, open: OpenCalls): (() => void) | undefined {
  if (!options.auth.enabled) return undefined;
  return options.auth.store.onRevoked?.((keyId) => {
    for (const stream of open.get(keyId) ?? []) answerStatus(stream, GrpcStatus.UNAUTHENTICATED, 'The API key was revoked');
    open.delete(keyId);
    options.sessions.endOwnedBy(keyId, 'its API key was revoked')
      .catch((error: Error) => options.log.warn({ err: error, keyId }, 'could not stop the Spark Connect sessions of a revoked key'));
  });
}

/** Holds one of the caller's call slots until the call ends; none left: RESOURCE_EXHAUSTED, before anything is done. */
function takeCallSlot(slots: ConnectionSlots, caller: ConnectCaller, stream: ServerHttp2Stream): void {
  const release = slots.take(connectionOwner(caller.id, stream.session?.socket?.remoteAddress), () => stream.close());
  if (!release) throw new GrpcRefusal(GrpcStatus.RESOURCE_EXHAUSTED, `Too many Spark Connect calls open at once for this key (at most ${slots.perOwner}): let some end and try again`);
  stream.once('close', release);
}

interface Endpoint { upstreams: Upstreams; open: OpenCalls; callSlots: ConnectionSlots }

async function handleCall(options: ConnectEndpointOptions, endpoint: Endpoint, stream: ServerHttp2Stream, headers: IncomingHttpHeaders): Promise<void> {
  const caller = authenticateCall(options.auth, headers);
  takeCallSlot(endpoint.callSlots, caller, stream);
  if (caller.id !== null) trackCall(endpoint.open, caller.id, stream);
  let template: string | undefined;
  try {
    template = templateOf(headers);
  } catch (error) {
    throw new GrpcRefusal(GrpcStatus.INVALID_ARGUMENT, (error as Error).message);
  }
  const { head, bodyEnded, sessionId } = await readSessionId(stream);
  const session = await options.sessions.acquire(caller, sessionId, template);
  if (stream.closed || stream.destroyed) {
    options.sessions.release(session);
    return;
  }
  relay({ stream, headers, head, bodyEnded }, endpoint.upstreams.get(session.server!), serverAuthorization(options.sessions.serverToken(session.appName!)), () => options.sessions.checkEnded(session), () => options.sessions.release(session));
}

/** The endpoint's server (not listening yet); its close also drops the connections to the sessions' servers. */
export function createConnectEndpoint(options: ConnectEndpointOptions): Http2Server {
  const limits = options.limits ?? defaultConnectLimits();
  // The sessions' connections to their servers (shared with the warm pool's warm-up): a pooled server's is open already.
  const endpoint: Endpoint = { upstreams: options.sessions.upstreams, open: new Map(), callSlots: new ConnectionSlots(limits.callsPerKey) };
  const stopWatching = watchRevocations(options, endpoint.open);
  // Large windows for what clients send (artifacts, local relations), as on the upstream leg (relay.ts).
  const settings = { initialWindowSize: STREAM_WINDOW };
  const server = options.tls ? createSecureServer({ cert: options.tls.cert, key: options.tls.key, settings }) : createServer({ settings });
  server.on('session', (session) => session.once('remoteSettings', () => session.setLocalWindowSize(CONNECTION_WINDOW)));
  limitConnections(server, limits);
  server.on('stream', (stream, headers) => {
    stream.on('error', () => { /* a reset call: nothing to answer */ });
    if (headers[':method'] !== 'POST' || !String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      stream.respond({ ':status': 415, 'content-type': 'text/plain' });
      stream.end('This is the Spark Connect endpoint (gRPC): connect with a Spark Connect client, sc://HOST:PORT/;token=YOUR_KEY\n');
      return;
    }
    handleCall(options, endpoint, stream, headers).catch((error: unknown) => {
      if (error instanceof GrpcRefusal) {
        answerStatus(stream, error.code, error.message, error.errorClass);
        return;
      }
      options.log.error({ err: error }, 'Spark Connect call failed');
      answerStatus(stream, GrpcStatus.INTERNAL, 'the Spark Connect endpoint failed (see its log)');
    });
  });
  server.on('connection', (socket: Socket) => socket.setNoDelay(true));
  server.on('sessionError', () => { /* a broken client connection: its streams end with it */ });
  server.once('close', () => {
    stopWatching?.();
    endpoint.upstreams.close();
  });
  return server;
}
