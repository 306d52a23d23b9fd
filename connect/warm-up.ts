// The warm-up of a warm pool's new Connect server (the calls: warm-up-plan.ts), sent straight to
// the server over HTTP/2 as a client's gRPC calls are (over the relay's own upstream connection
// when it is given, which then stays open for the session's first call: no new connection to
// make, on either side, when a client comes), in a session of the service's own (WARM_UP_SESSIONS)
// released at the end. Each call must
// answer OK (the queries with Arrow rows); anything else, or the abort signal (the pool's
// timeout, its close), ends the warm-up with an error and its calls cancelled.
import { randomUUID } from 'node:crypto';
import { type ClientHttp2Session, constants } from 'node:http2';
import { GrpcStatus } from './grpc-status.js';
import type { ServerAddress } from './placement.js';
import { grpcFrame, grpcMessages } from './protobuf.js';
import { Upstreams } from './relay.js';
import { readExecuteAnswer, reattachRequest, releaseExecuteRequest, releaseSessionRequest, type WarmUpCall, warmUpCalls, type WarmUpMethod } from './warm-up-plan.js';

const OK = 0;
/** A reattachable operation's answer stream is cut by the server every 2 minutes (Spark's default): reattached at most this often. */
const MAX_REATTACHES = 10;

interface GrpcAnswer { status: number; message: string; body: Buffer }

const decoded = (message: string): string => {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
};

/** One call to the server: its whole answer body and its gRPC status (from the trailers, or a trailers-only answer). */
function grpcCall(session: ClientHttp2Session, method: WarmUpMethod, request: Buffer, signal: AbortSignal, auth: Readonly<Record<string, string>>): Promise<GrpcAnswer> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) { reject(signal.reason as Error); return; }
    const stream = session.request({
      ':method': 'POST', ':path': `/spark.connect.SparkConnectService/${method}`, 'content-type': 'application/grpc', te: 'trailers', ...auth,
    });
    const chunks: Buffer[] = [];
    let status: { code: number; message: string } | undefined;
    const readStatus = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] !== undefined) status = { code: Number(headers['grpc-status']), message: decoded(String(headers['grpc-message'] ?? '')) };
    };
    const cancel = () => stream.close(constants.NGHTTP2_CANCEL);
    signal.addEventListener('abort', cancel, { once: true });
    stream.on('response', readStatus).on('trailers', readStatus).on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', () => { /* 'close' decides */ });
    stream.once('close', () => {
      signal.removeEventListener('abort', cancel);
      if (signal.aborted) reject(signal.reason as Error);
      else if (!status) reject(new Error(`${method}: the call ended without a gRPC status (HTTP/2 code ${stream.rstCode})`));
      else resolve({ status: status.code, message: status.message, body: Buffer.concat(chunks) });
    });
    stream.end(grpcFrame(request));
  });
}

function mustBeOk(answer: GrpcAnswer, method: WarmUpMethod): void {
  if (answer.status !== OK) throw new Error(`${method} answered gRPC status ${answer.status}: ${answer.message.slice(0, 500)}`);
}

/** An ExecutePlan read to its last answer (reattached when the server cut the stream), then released. */
async function executeToEnd(session: ClientHttp2Session, sessionId: string, call: Extract<WarmUpCall, { method: 'ExecutePlan' }>, signal: AbortSignal, auth: Readonly<Record<string, string>>): Promise<void> {
  let answer = await grpcCall(session, 'ExecutePlan', call.request, signal, auth);
  let [rows, complete, lastResponseId] = [0, false, undefined as string | undefined];
  for (let reattaches = 0; ; reattaches++) {
    mustBeOk(answer, reattaches === 0 ? 'ExecutePlan' : 'ReattachExecute');
    for (const message of grpcMessages(answer.body)) {
      const read = readExecuteAnswer(message);
      rows += read.rows;
      complete ||= read.complete;
      lastResponseId = read.responseId ?? lastResponseId;
    }
    if (complete) break;
    if (reattaches >= MAX_REATTACHES) throw new Error(`ExecutePlan: no last answer after ${MAX_REATTACHES} reattaches`);
    answer = await grpcCall(session, 'ReattachExecute', reattachRequest(sessionId, call.operationId, lastResponseId), signal, auth);
  }
  mustBeOk(await grpcCall(session, 'ReleaseExecute', releaseExecuteRequest(sessionId, call.operationId), signal, auth), 'ReleaseExecute');
  if (call.rows && rows === 0) throw new Error('ExecutePlan: the query brought no Arrow rows back');
}

/**
 * The warm-up's sessions, one after another, each a random id of its own released at the end.
 * One: running its calls again in more session ids (so that the code of making a session gets
 * compiled) did not make a client's new session measurably cheaper (bench/connect-first.ts
 * `warmN`: the server's CPU for that session's first query 1.0–1.8 s either way; README,
 * "Benchmarks"); a client's own first session does, so what is left differs in the calls.
 */
export const WARM_UP_SESSIONS = 1;

/** The warm-up's calls in one session of its own, then the session released (3.5 has no such call and drops it when idle). */
async function warmUpSession(session: ClientHttp2Session, version: string, signal: AbortSignal, auth: Readonly<Record<string, string>>): Promise<void> {
  const sessionId = randomUUID(); // never given to anyone, never logged
  for (const call of warmUpCalls(sessionId, version, randomUUID)) {
    if (call.method === 'ExecutePlan') await executeToEnd(session, sessionId, call, signal, auth);
    else mustBeOk(await grpcCall(session, call.method, call.request, signal, auth), call.method);
  }
  const released = await grpcCall(session, 'ReleaseSession', releaseSessionRequest(sessionId), signal, auth);
  if (released.status !== GrpcStatus.UNIMPLEMENTED) mustBeOk(released, 'ReleaseSession');
}

/**
 * Runs the warm-up on the Connect server at `address` (Spark `version`), with `auth` (the server's
 * own token: 4.x servers refuse a call without it), in `sessions` sessions (WARM_UP_SESSIONS);
 * rejects with why when it fails or `signal` aborts.
 * `shared`: the relay's connections (sessions.ts), whose connection to this server is kept once
 * the warm-up succeeded; without it, a connection of its own, closed at the end.
 */
export async function warmUpServer(address: ServerAddress, version: string, signal: AbortSignal, auth: Readonly<Record<string, string>> = {}, shared?: Upstreams, sessions = WARM_UP_SESSIONS): Promise<void> {
  const upstreams = shared ?? new Upstreams();
  const session = upstreams.get(address);
  let succeeded = false;
  try {
    for (let i = 0; i < sessions; i++) await warmUpSession(session, version, signal, auth);
    succeeded = true;
  } finally {
    if (!shared) upstreams.close();
    else if (!succeeded) session.destroy(); // the server is stopped: nothing will use it
  }
}
