// DNS rebinding: a web page on evil.example whose name is made to resolve to 127.0.0.1 can
// send requests to a service on this machine, and without authentication they would be
// obeyed. The browser still sends `Host: evil.example`, so with auth off only the Host
// names this service is known by are served (loopback names by default in local mode).
import type { FastifyInstance } from 'fastify';
import { sendError } from './errors.js';

export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '::1'];

/** `name`, `name:port`, `[v6]`, `[v6]:port` → the name, lower case. */
export function hostName(header: string): string {
  const host = header.trim().toLowerCase();
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']') > 0 ? host.indexOf(']') : undefined);
  const colon = host.lastIndexOf(':');
  return (colon >= 0 && host.indexOf(':') === colon ? host.slice(0, colon) : host).replace(/\.$/, '');
}

/** Whether a host name is allowed: listed, or one label under a listed `*.parent`, or `*` listed. */
export function hostAllowed(names: ReadonlySet<string>, name: string): boolean {
  if (names.has(name) || names.has('*')) return true;
  const dot = name.indexOf('.');
  return dot > 0 && names.has(`*${name.slice(dot)}`);
}

export function installHostAllowlist(app: FastifyInstance, allowed: string[]): void {
  const names = new Set(allowed.map((name) => name.startsWith('*.') ? `*.${hostName(name.slice(2))}` : hostName(name)));
  app.addHook('onRequest', async (request, reply) => {
    const name = hostName(request.headers.host ?? '');
    if (hostAllowed(names, name)) return;
    return sendError(reply, 403, `requests for host "${name}" are not served: with authentication off, only ${[...names].join(', ')} are (local mode's --allowed-hosts)`);
  });
}
