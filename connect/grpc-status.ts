// gRPC's answers without a body: a "trailers-only" response (HTTP 200, the status in the one
// HEADERS frame that ends the stream), which every gRPC client shows as that status and message.
import { constants, type ServerHttp2Stream } from 'node:http2';
import { encodeMessage } from './protobuf.js';

/** The gRPC status codes the endpoint answers with itself (the rest come from the Spark server). */
export const GrpcStatus = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusCode = (typeof GrpcStatus)[keyof typeof GrpcStatus];

/**
 * An answer the endpoint gives instead of relaying: a status and the message the client shows,
 * and where Spark's own server would name one, its error class (e.g. INVALID_HANDLE.SESSION_CHANGED).
 */
export class GrpcRefusal extends Error {
  constructor(readonly code: GrpcStatusCode, message: string, readonly errorClass?: string) {
    super(message);
  }
}

/**
 * `grpc-status-details-bin`: a google.rpc.Status whose one detail is a google.rpc.ErrorInfo naming
 * Spark's error class, as a Spark Connect server sends it, so that pyspark acts on the class
 * (4.x: INVALID_HANDLE.SESSION_CHANGED marks its session stopped, and the next getOrCreate()
 * builds a new one) and shows it: "(CLASS) message" (the ErrorInfo's reason). Code and message
 * must be the status's own: the client checks both.
 */
export function statusDetails(code: GrpcStatusCode, message: string, errorClass: string): string {
  const metadata = [['errorClass', errorClass], ['sqlState', 'HY000']].map(([k, v]) => [3, [[1, k], [2, v]]] as const);
  const errorInfo = encodeMessage([[1, errorClass], [2, 'submission-service'], ...metadata]);
  const any = [[1, 'type.googleapis.com/google.rpc.ErrorInfo'], [2, errorInfo]] as const;
  return encodeMessage([[1, code], [2, message], [3, any]]).toString('base64');
}

/** grpc-message is percent-encoded (gRPC's HTTP/2 mapping): spaces and ASCII punctuation kept readable. */
export const encodeGrpcMessage = (message: string): string =>
  message.replace(/[^ -$&-~]/gu, (char) => encodeURIComponent(char));

/** The headers of a trailers-only gRPC answer. */
export function statusHeaders(code: GrpcStatusCode, message: string, errorClass?: string): Record<string, string | number> {
  return {
    [constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message),
    ...(errorClass ? { 'grpc-status-details-bin': statusDetails(code, message, errorClass) } : {}),
  };
}

/** Ends `stream` with the status, unless it is closed or its answer began (then it is reset). */
export function answerStatus(stream: ServerHttp2Stream, code: GrpcStatusCode, message: string, errorClass?: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  stream.respond(statusHeaders(code, message, errorClass), { endStream: true });
}
