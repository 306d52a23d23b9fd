// gRPC's answers without a body: a "trailers-only" response (HTTP 200, the status in the one
// HEADERS frame that ends the stream), which every gRPC client shows as that status and message.
import { constants, type ServerHttp2Stream } from 'node:http2';

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

/** An answer the endpoint gives instead of relaying: a status and the message the client shows. */
export class GrpcRefusal extends Error {
  constructor(readonly code: GrpcStatusCode, message: string) {
    super(message);
  }
}

/** grpc-message is percent-encoded (gRPC's HTTP/2 mapping): spaces and ASCII punctuation kept readable. */
export const encodeGrpcMessage = (message: string): string =>
  message.replace(/[^ -$&-~]/gu, (char) => encodeURIComponent(char));

/** The headers of a trailers-only gRPC answer. */
export function statusHeaders(code: GrpcStatusCode, message: string): Record<string, string | number> {
  return { [constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) };
}

/** Ends `stream` with the status, unless it is closed or its answer began (then it is reset). */
export function answerStatus(stream: ServerHttp2Stream, code: GrpcStatusCode, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  stream.respond(statusHeaders(code, message), { endStream: true });
}
