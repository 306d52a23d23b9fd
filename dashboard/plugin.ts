// The web dashboard at /dashboard/: one static page (plain HTML/CSS/JS) that reads the public
// REST API from the browser. With authentication on, the page asks for a key once
// (POST /dashboard/login) and keeps an opaque session cookie that the auth plugin accepts for
// GET requests under /api/; the key itself never goes back to the browser.
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { packageRoot } from '../lib/package-root.js';
import type { ApiKeyIdentity } from '../submit-api/auth/key-store.js';
import type { KeyVerifier } from '../submit-api/auth/plugin.js';

export interface DashboardOptions {
  auth: { enabled: boolean; store: KeyVerifier };
  /** How long a dashboard session lasts (default 12 hours). */
  sessionTtlMs?: number;
}

export const SESSION_COOKIE = 'ss_session';
const MAX_SESSIONS = 10_000;
const STATIC_DIR = join(packageRoot, 'dashboard', 'static');
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};
// No inline script or style anywhere, so the policy can be strict.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

interface Session { key: string; id: string; expires: number }

/** The value of one cookie in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function loadStatic(): Map<string, { body: Buffer; type: string }> {
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const name of readdirSync(STATIC_DIR)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(join(STATIC_DIR, name)), type });
  }
  return files;
}

const dashboard: FastifyPluginAsync<DashboardOptions> = async (app, opts) => {
  const ttl = opts.sessionTtlMs ?? 12 * 60 * 60 * 1000;
  const files = loadStatic();
  const sessions = new Map<string, Session>();

  // The auth plugin asks this for GET requests that carry no key (see submit-api/auth/plugin.ts).
  // The key is kept server-side and checked again on each use, so revoking it ends the session.
  const sessionIdentity = (request: FastifyRequest): ApiKeyIdentity | undefined => {
    const sid = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const session = sid ? sessions.get(sid) : undefined;
    if (!session || !sid) return undefined;
    const identity = session.expires > Date.now() ? opts.auth.store.verify(session.key) : undefined;
    if (!identity) sessions.delete(sid);
    return identity;
  };
  app.decorate('sessionIdentity', sessionIdentity);

  const page = (reply: FastifyReply) => {
    const index = files.get('index.html')!;
    return reply
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .type(index.type).send(index.body);
  };
  const hide = { schema: { hide: true } };

  // The same page for the list and for each application; the script routes on the path.
  app.get('/dashboard/', hide, async (_request, reply) => page(reply));
  app.get('/dashboard/apps/:appName', hide, async (_request, reply) => page(reply));

  app.get<{ Params: { file: string } }>('/dashboard/static/:file', hide, async (request, reply) => {
    const file = files.get(request.params.file);
    if (!file) return reply.code(404).send({ message: 'Not found', statusCode: 404, error: 'Not Found' });
    return reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').type(file.type).send(file.body);
  });

  // What the page needs to know before it calls the API.
  app.get('/dashboard/session', hide, async (request) => {
    const identity = opts.auth.enabled ? sessionIdentity(request) : undefined;
    return { authEnabled: opts.auth.enabled, signedIn: !opts.auth.enabled || identity !== undefined, keyId: identity?.id ?? null };
  });

  app.post<{ Body: { key?: unknown } }>('/dashboard/login', {
    schema: {
      hide: true,
      body: { type: 'object', required: ['key'], properties: { key: { type: 'string', minLength: 1, maxLength: 512 } } },
    },
  }, async (request, reply) => {
    if (!opts.auth.enabled) return { signedIn: true, keyId: null };
    const key = String(request.body.key).trim();
    const identity = opts.auth.store.verify(key);
    if (!identity) {
      return reply.code(401).send({ message: 'The API key is not valid (unknown or revoked).', statusCode: 401, error: 'Unauthorized' });
    }
    const now = Date.now();
    for (const [sid, s] of sessions) if (s.expires <= now) sessions.delete(sid);
    if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
    const sid = randomBytes(32).toString('base64url');
    sessions.set(sid, { key, id: identity.id, expires: now + ttl });
    const secure = request.protocol === 'https' ? '; Secure' : '';
    reply.header('set-cookie', `${SESSION_COOKIE}=${sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(ttl / 1000)}${secure}`);
    return { signedIn: true, keyId: identity.id };
  });

  app.post('/dashboard/logout', hide, async (request, reply) => {
    const sid = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (sid) sessions.delete(sid);
    reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    return { signedIn: false };
  });
};

export const dashboardPlugin = fp(dashboard, { name: 'submission-service-dashboard', fastify: '5.x' });
export default dashboardPlugin;
