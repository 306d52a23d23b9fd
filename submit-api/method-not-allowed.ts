// 405 with `Allow` for a known path asked with a method it does not take (HTTP's rule), where
// fastify would answer 404. Routes are collected as they are added; a path's methods are
// found by matching it against their patterns (`:param` = one segment).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.js';

interface Known { pattern: RegExp; methods: Set<string>; exact: boolean }

const toPattern = (url: string) => new RegExp(`^${url
  .replace(/\/+$/, '')
  .split('/')
  .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
  .join('/')}/?$`);

/** Call before any route is added; returns the handler for paths no route matched. */
export function trackMethods(app: FastifyInstance): (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined {
  const known = new Map<string, Known>();
  app.addHook('onRoute', (route) => {
    const entry = known.get(route.url) ?? { pattern: toPattern(route.url), methods: new Set<string>(), exact: !/[:*]/.test(route.url) };
    for (const method of [route.method].flat()) entry.methods.add(method);
    known.set(route.url, entry);
  });
  return (request, reply) => {
    const path = request.url.split('?', 1)[0];
    // A path that names a resource of its own (`/api/apps/counts`) is that resource, not an
    // instance of a pattern beside it (`/api/apps/:appName`; no appName looks like it).
    const matching = [...known.values()].filter((k) => k.pattern.test(path));
    const exact = matching.filter((k) => k.exact);
    const allowed = new Set<string>();
    for (const { methods } of exact.length > 0 ? exact : matching) for (const m of methods) allowed.add(m);
    if (allowed.size === 0 || allowed.has(request.method)) return undefined;
    const allow = [...allowed].sort().join(', ');
    reply.header('allow', allow);
    return sendError(reply, 405, `${request.method} is not allowed on ${path}; allowed: ${allow}`);
  };
}
