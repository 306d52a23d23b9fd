// JSON request bodies with a nesting cap. Code that walks a parsed body recursively (the API's
// unsafeField, Ajv's validators, merges) would spend its stack on a body like `[[[[…]]]]` and
// fail late with a 500: 100,000 levels took ~0.45 s of CPU before the answer. The raw text is
// scanned first, in one iterative pass, so such a body is a quick 400 on every route of the
// server (the API, the dashboard's login, the notebook gateway) before anything walks it.
import type { FastifyInstance } from 'fastify';

/** Deeper bodies are refused: our schemas nest less than ten levels; 64 leaves room for free-form maps. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `text` opens more than `max` arrays/objects inside one another. Brackets inside
 * strings do not count; the text need not be valid JSON (the parser judges that afterwards).
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: the next character is escaped, whatever it is
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** A 400 that fastify's error handlers (the API's and the gateway's) pass on with its message. */
class NestingError extends Error {
  readonly statusCode = 400;
  readonly code = 'JSON_TOO_DEEP';
}

/**
 * Replaces the server's `application/json` parser with the same parser (fastify's own, with the
 * server's prototype-poisoning settings) behind the nesting check.
 */
export function installJsonBodyParser(app: FastifyInstance, maxDepth = MAX_JSON_DEPTH): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig as { onProtoPoisoning?: 'error' | 'remove' | 'ignore'; onConstructorPoisoning?: 'error' | 'remove' | 'ignore' };
  const parse = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (nestsDeeperThan(body as string, maxDepth)) {
      done(new NestingError(`the JSON body nests deeper than ${maxDepth} levels`), undefined);
      return;
    }
    void parse(request, body as string, done);
  });
}
