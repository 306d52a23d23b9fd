// One call relayed to a session's Connect server over HTTP/2 (node:http2 on both sides: the
// frames, flow control and trailers are the library's): the request's headers (less the key) and
// body go up, the response's headers, body and trailers (gRPC's status) come back. A cancelled
// call is cancelled upstream, and the other way round.
import { type ClientHttp2Session, type ClientHttp2Stream, connect, constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import { answerStatus, GrpcStatus } from './grpc-status.js';
import { forwardedHeaders } from './metadata.js';
import { authorityOf, type ServerAddress } from './placement.js';

/**
 * HTTP/2 flow-control windows of the endpoint's receiving side of each leg. Node's default (64 KiB
 * per stream and per connection) lets a Connect server send 64 KiB of Arrow batches per round trip
 * through the relay: on loopback that costs little, between pods (~1 ms) it caps a fetch near
 * 64 MB/s. Larger windows, still bounded: a slow client holds at most this much of its answer in
 * the endpoint's memory (the relay reads the server only as the client takes it).
 */
export const STREAM_WINDOW = 1024 * 1024;
export const CONNECTION_WINDOW = 4 * 1024 * 1024;

/** One HTTP/2 connection per Connect server address, made at first use and dropped when it closes. */
export class Upstreams {
  private readonly connections = new Map<string, ClientHttp2Session>();

  get(address: ServerAddress): ClientHttp2Session {
    const authority = authorityOf(address);
    const open = this.connections.get(authority);
    if (open && !open.closed && !open.destroyed) return open;
    // No Nagle: a call is a few small frames each way, and waiting to batch them adds latency.
    const session = connect(`http://${authority}`, {
      settings: { initialWindowSize: STREAM_WINDOW },
      createConnection: () => tcpConnect({ host: address.host, port: address.port, noDelay: true }),
    });
    session.once('connect', () => session.setLocalWindowSize(CONNECTION_WINDOW));
    session.on('error', () => { /* each stream reports it */ });
    session.once('close', () => { if (this.connections.get(authority) === session) this.connections.delete(authority); });
    this.connections.set(authority, session);
    return session;
  }

  /** Whether a connection to `address` is up now (made, not closing): its server answered it, and a dead local process would have closed it. */
  isOpen(address: ServerAddress): boolean {
    const open = this.connections.get(authorityOf(address));
    return open !== undefined && !open.connecting && !open.closed && !open.destroyed;
  }

  close(): void {
    for (const session of this.connections.values()) session.destroy();
    this.connections.clear();
  }
}

/**
 * The metadata the service sends a Connect server on every call, the relay's and the warm-up's,
 * instead of the caller's key: the server's own token (`token`, ServerPlacement.token), as Spark
 * 4's PreSharedKeyAuthenticationInterceptor reads it (domain/connect-server-token.ts); none when
 * the server was given none.
 */
export const serverAuthorization = (token: string | undefined): Record<string, string> => (token === undefined ? {} : { authorization: `Bearer ${token}` });

/** Response headers as they go back: pseudo-headers other than :status are the connection's. */
const responseHeaders = (headers: IncomingHttpHeaders): Record<string, string | string[] | number> => {
  const out: Record<string, string | string[] | number> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || (name.startsWith(':') && name !== ':status')) continue;
    out[name] = value;
  }
  return out;
};

export interface RelayCall {
  stream: ServerHttp2Stream;
  headers: IncomingHttpHeaders;
  /** What was read of the body already (to find the session id), sent first. */
  head: Buffer[];
  /** Whether the client's body had ended while it was read. */
  bodyEnded: boolean;
}

/**
 * Relays `call` to `upstream`, with `serverAuth` (the server's own secret: the caller's key never
 * goes up, forwardedHeaders drops it). `onUnreachable` is asked what to answer when the server cannot be
 * reached (the session may have ended); `onDone` runs once the call is over either way.
 */
export function relay(call: RelayCall, upstream: ClientHttp2Session, serverAuth: Record<string, string>, onUnreachable: () => Promise<string | undefined>, onDone: () => void): void {
  const { stream, headers } = call;
  let request: ClientHttp2Stream;
  try {
    request = upstream.request({ ':method': 'POST', ':path': headers[':path'] ?? '/', ...forwardedHeaders(headers), ...serverAuth }, { endStream: false });
  } catch (error) {
    answerStatus(stream, GrpcStatus.UNAVAILABLE, `could not reach the session's Spark Connect server: ${(error as Error).message}`);
    onDone();
    return;
  }
  let trailers: IncomingHttpHeaders | undefined;
  let done = false;
  const finish = () => { if (!done) { done = true; onDone(); } };
  stream.once('close', () => {
    if (!request.closed) request.close(constants.NGHTTP2_CANCEL);
    finish();
  });
  request.on('response', (responded, flags) => {
    if (stream.closed || stream.destroyed) return;
    // A trailers-only answer (a status and no body) ends with its headers.
    if ((flags ?? 0) & constants.NGHTTP2_FLAG_END_STREAM) {
      stream.respond(responseHeaders(responded), { endStream: true });
      return;
    }
    stream.respond(responseHeaders(responded), { waitForTrailers: true });
    request.pipe(stream);
  });
  request.on('trailers', (received) => { trailers = received; });
  stream.on('wantTrailers', () => {
    stream.sendTrailers(trailers ? responseHeaders(trailers) : { 'grpc-status': String(GrpcStatus.INTERNAL), 'grpc-message': 'the Spark Connect server ended the call without a status' });
  });
  let erred = false;
  const unreachable = (why: string) => {
    void onUnreachable().then((ended) => {
      if (ended) answerStatus(stream, GrpcStatus.FAILED_PRECONDITION, ended);
      else answerStatus(stream, GrpcStatus.UNAVAILABLE, `could not reach the session's Spark Connect server: ${why}`);
    });
  };
  request.on('error', (error: Error) => {
    erred = true;
    if (stream.headersSent || stream.closed) {
      if (!stream.closed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    unreachable(error.message);
  });
  request.on('close', () => {
    const code = request.rstCode;
    if (erred || stream.closed) return;
    // The server reset the call (e.g. cancelled it): the client's call is reset the same way.
    if (stream.headersSent) {
      if (code !== undefined && code !== constants.NGHTTP2_NO_ERROR) stream.close(code);
      return;
    }
    // Ended before any answer, and Node gave no 'error' (it gives none for a reset with CANCEL or
    // NO_ERROR, nor when the connection closed under the call: it closes its calls with CANCEL).
    // Left so, the client's call would stay open for good. A closed connection is a server gone;
    // a reset from a live one is passed on as it came.
    if (upstream.closed || upstream.destroyed) unreachable('the connection to it closed');
    else stream.close(code ?? constants.NGHTTP2_INTERNAL_ERROR);
  });
  for (const chunk of call.head) request.write(chunk);
  if (call.bodyEnded) request.end();
  else stream.pipe(request);
}
