// One catalogue of error answers and one handler: clients see every error below 500
// as JSON with a message (and the field, for 400); 5xx are logged in full. Only "not found"
// means absent: any other error from the cluster is logged and answered 503.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConflictError, NotFoundError, UnavailableError } from '../cluster/cluster.js';
import { KubernetesError } from '../cluster/kubernetes/errors.js';
import { InvalidCursorError } from '../cluster/paging.js';

export class HttpError extends Error {
  constructor(readonly statusCode: number, message: string, readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
}

export const notFound = (what: string) => new HttpError(404, `${what} does not exist`);

const reasons: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 414: 'URI Too Long',
  413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable', 507: 'Insufficient Storage',
};

export function sendError(reply: FastifyReply, statusCode: number, message: string, extra: Record<string, unknown> = {}) {
  return reply.code(statusCode).type('application/json').send({ message, statusCode, error: reasons[statusCode] ?? 'Error', ...extra });
}

interface AjvIssue { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string }

/** `configOverrides.executor.cores must be integer`: the path a person can find in their body. */
function describeValidation(error: FastifyError & { validation?: AjvIssue[]; validationContext?: string }) {
  const issue = error.validation?.[0];
  if (!issue) return { message: error.message };
  const path = issue.instancePath.split('/').filter(Boolean);
  if (issue.keyword === 'additionalProperties') path.push(String(issue.params.additionalProperty));
  if (issue.keyword === 'required') path.push(String(issue.params.missingProperty));
  const field = path.join('.') || (error.validationContext ?? 'body');
  const where = error.validationContext && error.validationContext !== 'body' ? `${error.validationContext} ` : '';
  const message =
    issue.keyword === 'additionalProperties' ? `${where}field "${field}" is not allowed (unknown field)`
    : issue.keyword === 'required' ? `${where}field "${field}" is required`
    : `${where}field "${field}" ${issue.message ?? 'is invalid'}`;
  return { message, field };
}

export function installErrorHandler(app: FastifyInstance, methodNotAllowed?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined) {
  app.setErrorHandler((error: FastifyError & { validation?: AjvIssue[] }, request, reply) => {
    // No route took the request, but fastify refused it first (e.g. a QUERY without a body type).
    if (request.is404) {
      const answered = methodNotAllowed?.(request, reply);
      if (answered) return answered;
    }
    if (error instanceof HttpError) return sendError(reply, error.statusCode, error.message, error.extra);
    if (error instanceof ConflictError) return sendError(reply, 409, error.message);
    if (error instanceof NotFoundError) return sendError(reply, 404, error.message);
    if (error instanceof InvalidCursorError) return sendError(reply, 400, error.message, { field: 'cursor' });
    if (error instanceof UnavailableError) {
      request.log.warn({ err: error }, 'answered 503: the cluster is unavailable');
      return sendError(reply, 503, error.message);
    }
    // Any other apiserver error (403 for our service account, 400/422 for an object we wrote,
    // a 5xx) is ours to fix, not the client's: passing its status on would change its meaning
    // (a 403 would read as "your key lacks the role"). Fail closed, 503, with Kubernetes'
    // own words, and a log line for the operator.
    if (error instanceof KubernetesError) {
      request.log.error({ err: error, kubernetesStatus: error.statusCode }, 'answered 503: Kubernetes refused a call');
      return sendError(reply, 503, error.message);
    }
    if (error.validation) return sendError(reply, 400, describeValidation(error).message, { field: describeValidation(error).field });
    if (error.code === 'FST_UNDER_PRESSURE') return sendError(reply.header('retry-after', '5'), 503, 'the service is overloaded; retry in a few seconds');
    // A full disk is the operator's to fix, and the client's to know: its request was not kept.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') {
      request.log.error({ err: error }, 'a write failed: no space left');
      return sendError(reply, 507, 'the service could not store this change: its disk is full (nothing was changed)');
    }
    // Out of file descriptors (too many connections at once): a passing state, not the client's fault.
    if (code === 'EMFILE' || code === 'ENFILE') {
      request.log.warn({ err: error }, 'answered 503: no file descriptor free');
      return sendError(reply.header('retry-after', '5'), 503, 'the service is busy (too many open connections); retry in a few seconds');
    }
    if (typeof code === 'string' && typeof (error as NodeJS.ErrnoException).syscall === 'string') {
      request.log.error({ err: error }, 'a file operation failed');
      return sendError(reply, 500, `the service could not store this change (${code}); nothing was changed`);
    }
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error }, 'request failed');
      return sendError(reply, status, 'internal error; the service log has the details');
    }
    return sendError(reply, status, error.message);
  });
  app.setNotFoundHandler((request, reply) => methodNotAllowed?.(request, reply) ?? sendError(reply, 404, `no route ${request.method} ${request.url.split('?')[0]}`));
}
