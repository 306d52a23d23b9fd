// Who is asking for a Spark UI and on which host (spark-ui-proxy.ts routes; this decides): the
// caller's identity and how it was proved (API key, the UI host's cookie, the dashboard's
// session), what a request on an application's own UI origin may not do, and the hop from the
// service's host to that origin with a hand-over grant.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyIdentity } from '../submit-api/auth/key-store.js';
import { keyFromHeaders, type KeyVerifier } from '../submit-api/auth/plugin.js';
import { hostName } from '../submit-api/host-allowlist.js';
import { cookieValue, type Sessions } from './session.js';
import { GRANT_PARAM, HANDOVER_AUDIENCE, HANDOVER_TTL_MS, UI_AUDIENCE, UI_COOKIE, appOfUiHost, appUiHost, fromAnotherOrigin } from './spark-ui-access.js';
import { fail } from './spark-ui-errors.js';

/** What telling the caller needs: whether authentication is on, its keys, and the dashboard's sessions. */
export interface CallerChecks { auth: { enabled: boolean; store: KeyVerifier }; sessions: Sessions }

/** The query string without the hand-over grant ('' or `?…`). */
export function withoutGrant(query: string): string {
  const params = new URLSearchParams(query);
  params.delete(GRANT_PARAM);
  const rest = params.toString();
  return rest ? `?${rest}` : '';
}

/** The caller and how they proved it; `null` identity: authentication is off. */
export function callerOf(opts: CallerChecks, request: FastifyRequest, appName: string, onUiHost: boolean): { identity: ApiKeyIdentity | null; via: 'key' | 'session' | 'cookie' | 'none' } | undefined {
  if (!opts.auth.enabled) return { identity: null, via: 'none' };
  const key = keyFromHeaders(request.headers);
  if (key) {
    const identity = opts.auth.store.verify(key);
    return identity && { identity, via: 'key' };
  }
  const fromCookie = opts.sessions.identityOfGrant(cookieValue(request.headers.cookie, UI_COOKIE), UI_AUDIENCE, appName);
  if (fromCookie) return { identity: fromCookie, via: 'cookie' };
  // The dashboard's session (SameSite=Strict) arrives with navigations from the dashboard itself.
  const session = onUiHost ? undefined : opts.sessions.verify(request);
  return session && { identity: session, via: 'session' };
}

/**
 * On the Spark UI host each application has an origin of its own, `<app>.<ui host>`: what a
 * request there may not do (open another application's UI, or come from another origin's page).
 */
export function uiOriginRefusal(request: FastifyRequest, appName: string, uiHostName: string): { status: number; message: string } | undefined {
  const uiApp = appOfUiHost(hostName(request.headers.host ?? ''), uiHostName);
  if (uiApp !== appName) {
    return { status: 404, message: uiApp ? `This host serves the Spark UI of ${uiApp} only.` : `Each application's Spark UI has a host of its own: ${appName}.${uiHostName}.` };
  }
  if (fromAnotherOrigin(request.headers)) {
    return { status: 403, message: 'A page of another origin (another application\'s Spark UI, another site) cannot read this Spark UI.' };
  }
  return undefined;
}

/** To the Spark UI host, with a grant that host turns into its cookie. */
export function toUiHost(
  request: FastifyRequest, reply: FastifyReply,
  to: { uiHost: string; sessions: Sessions; appName: string; path: string; query: string; identity: ApiKeyIdentity | null },
) {
  const explicitPort = /:\d+$/.test(to.uiHost) || to.uiHost.endsWith(']');
  const port = /:(\d+)$/.exec(request.headers.host ?? '')?.[1];
  const host = appUiHost(to.appName, explicitPort || !port ? to.uiHost : `${to.uiHost}:${port}`);
  if (!host) return fail(reply, 404, `${to.appName} is not a host name, so its Spark UI cannot have an origin of its own.`);
  const params = new URLSearchParams(to.query);
  if (to.identity) params.set(GRANT_PARAM, to.sessions.grant(to.identity.id, HANDOVER_AUDIENCE, to.appName, HANDOVER_TTL_MS));
  const search = params.toString();
  return reply.redirect(`${request.protocol}://${host}${to.path}${search ? `?${search}` : ''}`);
}
