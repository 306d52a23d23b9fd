// API-key authentication for everything under /api/, except the API reference pages.
import { redactUrl } from '../log-redaction.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiKeyIdentity, KeyRevocations, Role } from './key-store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's key; null when authentication is off or the route needs none. */
    apiKey: ApiKeyIdentity | null;
  }
  interface FastifyContextConfig {
    /** Least role a route needs; `user` when not given. */
    role?: Role;
  }
}

export interface KeyVerifier {
  verify(key: string): ApiKeyIdentity | undefined;
  /** A key by its id (both key stores): a schedule's ticks submit as their owner key while it is valid. */
  byId?(id: string): ApiKeyIdentity | undefined;
  /** Stores that tell revocations (both key stores) let a revoked key's streams and websockets end at once. */
  onRevoked?: KeyRevocations['onRevoked'];
}

/**
 * Credentials other than a key header, e.g. a browser session cookie: the identity, checked
 * against the key store now, or undefined. Given by the composition root (cli/service.ts), so
 * this plugin knows nothing of who issues them.
 */
export type SessionVerifier = (request: FastifyRequest) => ApiKeyIdentity | undefined;

/**
 * Session credentials travel by themselves (a cookie), so a write that uses them must also carry
 * this header: a page of another site can't add a custom header without a CORS preflight, which
 * this service never grants. SameSite=Strict on the cookie is the first line; this is the second.
 */
export const CSRF_HEADER = 'x-requested-with';

export interface AuthPluginOptions {
  enabled: boolean;
  store: KeyVerifier;
  sessionVerifier?: SessionVerifier;
  /** Log the "authentication is OFF" warning and refused requests (default true). */
  log?: boolean;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const RANK: Record<Role, number> = { user: 1, admin: 2 };

// Reading the docs needs no key: people look at the API before they have one.
const OPEN_EXACT = new Set(['/api/', '/api/openapi.json', '/api/json', '/api/yaml']);
const OPEN_PREFIX = '/api/static/';

function isOpen(path: string): boolean {
  return OPEN_EXACT.has(path) || path.startsWith(OPEN_PREFIX);
}

function needsKey(request: FastifyRequest): boolean {
  // Judge by the matched route pattern when there is one, so a URL the router maps onto a
  // protected route (odd case, extra slashes, encodings) can't pass for a docs page.
  const pattern = request.routeOptions.url;
  const path = request.url.split('?', 1)[0];
  if (pattern !== undefined) return pattern.startsWith('/api/') && !isOpen(pattern);
  // No route matched (a 404 to be): still ask for a key so strangers can't probe what exists.
  return path.toLowerCase().startsWith('/api/') && !isOpen(path);
}

/** `X-API-Key: <key>`, or `Authorization: token <key>` (Jupyter gateway client) / `Bearer <key>`. */
export function keyFromHeaders(headers: FastifyRequest['headers']): string | undefined {
  const direct = headers['x-api-key'];
  if (typeof direct === 'string' && direct.trim()) return direct.trim();
  const auth = headers.authorization;
  const match = typeof auth === 'string' ? /^(?:token|bearer)\s+(\S+)\s*$/i.exec(auth) : null;
  return match?.[1];
}

function refuse(reply: FastifyReply, statusCode: 401 | 403, message: string): FastifyReply {
  if (statusCode === 401) reply.header('WWW-Authenticate', 'Bearer realm="submission-service"');
  const error = statusCode === 401 ? 'Unauthorized' : 'Forbidden';
  return reply.code(statusCode).type('application/json').send({ message, statusCode, error });
}

const auth: FastifyPluginAsync<AuthPluginOptions> = async (app, opts) => {
  const log = opts.log ?? true;
  app.decorateRequest('apiKey', null);

  if (!opts.enabled) {
    // Said loudly once, so an open deployment is never a surprise.
    if (log) app.log.warn('authentication is OFF: every route is open, no API key is checked');
    return;
  }

  app.addHook('onRequest', async (request, reply) => {
    if (!needsKey(request)) return;
    const key = keyFromHeaders(request.headers);
    const session = key ? undefined : opts.sessionVerifier?.(request);
    if (session && !SAFE_METHODS.has(request.method) && !request.headers[CSRF_HEADER]) {
      // Known though refused: the audit line (audit.ts) names the key. No handler runs after a refusal.
      request.apiKey = session;
      if (log) request.log.info({ url: request.url, keyId: session.id }, 'refused: session write without the CSRF header');
      return refuse(reply, 403, `A write with a session cookie needs the ${CSRF_HEADER} header (cross-site requests are refused).`);
    }
    if (!key && !session) {
      if (log) request.log.info({ url: redactUrl(request.url) }, 'refused: no API key');
      return refuse(reply, 401, 'An API key is required: send it as X-API-Key or Authorization: Bearer <key>.');
    }
    const identity = session ?? opts.store.verify(key!);
    if (!identity) {
      if (log) request.log.info({ url: redactUrl(request.url) }, 'refused: unknown or revoked API key');
      return refuse(reply, 401, 'The API key is not valid (unknown or revoked).');
    }
    const needed = request.routeOptions.config?.role ?? 'user';
    // Unknown roles (a typo in a route, a hand-edited keys file) rank so as to refuse.
    if ((RANK[identity.role] ?? 0) < (RANK[needed] ?? Infinity)) {
      request.apiKey = identity; // for the audit line, as above
      if (log) request.log.info({ url: redactUrl(request.url), keyId: identity.id }, `refused: needs role ${needed}`);
      return refuse(reply, 403, `This request needs a key with role "${needed}".`);
    }
    request.apiKey = identity;
  });
};

export const authPlugin = fp(auth, { name: 'submission-service-auth', fastify: '5.x' });
export default authPlugin;
