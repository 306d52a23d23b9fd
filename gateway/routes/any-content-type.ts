// Kernel Gateway reads a request's body as JSON whatever its Content-Type says (none, text/plain,
// tornado's default form type: Enterprise Gateway's client and tornado's HTTP client send those),
// and an empty body as no body. The routes of one scope get the same: `application/json` keeps
// fastify's own parser (and whatever guards the service puts on it); every other type, or none,
// is parsed here as JSON, with prototype poisoning refused as fastify does.
import type { FastifyInstance } from 'fastify';

export function parseAnyBodyAsJson(scope: FastifyInstance): void {
  const parseJson = scope.getDefaultJsonParser('error', 'error');
  // text/plain has a parser of its own (the string); here it is JSON like any other type.
  scope.removeContentTypeParser('text/plain');
  scope.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    void parseJson(request, body as string, done);
  });
}
