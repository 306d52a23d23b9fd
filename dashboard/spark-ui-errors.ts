// The Spark UI proxy's own error answers (spark-ui-proxy.ts), kept apart from its routing: the
// same JSON error shape whether the answer goes through fastify or, past it, on the raw response.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

const ERRORS: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests', 502: 'Bad Gateway', 504: 'Gateway Timeout' };

/** A JSON error on a raw response (past fastify: the proxy's own answers). */
export function failRaw(res: ServerResponse, statusCode: number, message: string): void {
  res.writeHead(statusCode, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ message, statusCode, error: ERRORS[statusCode] ?? 'Error' }));
}

export function fail(reply: FastifyReply, statusCode: number, message: string) {
  const error = ERRORS[statusCode] ?? 'Error';
  return reply.code(statusCode).type('application/json').send({ message, statusCode, error });
}
