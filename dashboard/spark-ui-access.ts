// Who may see a proxied Spark UI, and what its pages may do. The UI is HTML its driver writes,
// and a driver runs a user's code, so its pages are hostile to whoever opens them: served on the
// service's own origin they could call the API with the viewer's session (an admin's, say).
// Two ways to deny them that (docs/security.md, "The Spark UI"):
// - one host (the default): every proxied answer carries `Content-Security-Policy: sandbox`
//   without allow-same-origin, so the page runs in an origin of its own and the browser sends
//   none of the service's cookies with what it fetches; the viewer reaches the page by a
//   per-application, path-scoped cookie that only top-level navigations carry;
// - a host of its own (--spark-ui-host NAME): each application's UI is served on its own origin,
//   `<app>.NAME`, and nothing else is; the viewer is handed over with a one-minute grant turned
//   into that origin's cookie. One origin per application, not one for all: on a shared origin a
//   page could `history.replaceState` itself under another application's path and pass for it.
// Either way only the application's owner or an admin may open it (the API's policy), cookies
// do not pass between viewer and driver, and Spark's kill links need more than a cookie.
import { SPARK_STATIC_PATH } from '../cluster/history/spark-static-path.js';

/** The per-application cookie of the Spark UI (Path: that application's proxy path). */
export const UI_COOKIE = 'ss_spark_ui';
/** Query parameter that carries the hand-over grant to the Spark UI host. */
export const GRANT_PARAM = 'ss_ui_grant';
export const UI_AUDIENCE = 'submission-service/spark-ui';
export const HANDOVER_AUDIENCE = 'submission-service/spark-ui-handover';
/** How long the UI cookie lasts; each page opened renews it. */
export const UI_TTL_MS = 10 * 60 * 1000;
/** How long a hand-over grant (a redirect's URL) may be used. */
export const HANDOVER_TTL_MS = 60 * 1000;

/**
 * Scripts, forms and pop-ups (Spark's pages use them to sort, filter and open logs) in an origin
 * of their own: no allow-same-origin, no allow-popups-to-escape-sandbox, no top navigation.
 */
export const SANDBOX_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';

/** What a driver may not say to the viewer's browser through the proxy. */
export const DRIVER_HEADERS_DROPPED = [
  'set-cookie', 'set-cookie2', 'clear-site-data', 'service-worker-allowed', 'www-authenticate',
  'content-security-policy', 'content-security-policy-report-only',
  'access-control-allow-origin', 'access-control-allow-credentials', 'access-control-allow-methods',
  'access-control-allow-headers', 'access-control-expose-headers',
];

/**
 * The headers of a driver's or the History Server's answer as the viewer gets them (in place):
 * what they may not say dropped, the sandbox when `sandboxed`, no sniffing.
 */
export function forViewer(headers: Record<string, unknown>, sandboxed: boolean): void {
  for (const header of DRIVER_HEADERS_DROPPED) delete headers[header];
  if (sandboxed) headers['content-security-policy'] = SANDBOX_CSP;
  headers['x-content-type-options'] = 'nosniff';
}

/** What the viewer sends us for us alone: the driver gets none of it. */
export const VIEWER_HEADERS_DROPPED = ['cookie', 'authorization', 'x-api-key', 'x-requested-with', 'proxy-authorization'];

/** App names are DNS labels (job name + suffix), so each can name a host under the UI host. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `<app>.<ui host>[:port]`: the origin of one application's UI; undefined for a name that is no DNS label. */
export function appUiHost(appName: string, uiHost: string): string | undefined {
  return DNS_LABEL.test(appName) ? `${appName}.${uiHost}` : undefined;
}

/**
 * Which application a host name (no port) is the UI origin of under the UI host's name:
 * `undefined` when it is not under it, `''` for the UI host itself (it serves no application).
 */
export function appOfUiHost(host: string, uiHostName: string): string | undefined {
  if (host === uiHostName) return '';
  if (!host.endsWith(`.${uiHostName}`)) return undefined;
  const label = host.slice(0, -uiHostName.length - 1);
  return DNS_LABEL.test(label) ? label : '';
}

/**
 * A request another origin's page makes (a fetch, an image, a script) rather than a navigation:
 * on an application's own origin, pages of other applications (same site, other origin) and of
 * other sites get nothing, cookie or not; a top-level navigation still opens the page.
 */
export function fromAnotherOrigin(headers: Record<string, string | string[] | undefined>): boolean {
  const site = headers['sec-fetch-site'];
  return (site === 'same-site' || site === 'cross-site') && headers['sec-fetch-mode'] !== 'navigate';
}

/** `/dashboard/apps/{app}/spark-ui`, the proxy's path prefix of one application. */
export const uiPrefix = (appName: string) => `/dashboard/apps/${encodeURIComponent(appName)}/spark-ui`;

/** Whether a (raw) request path is one of the Spark UI proxy's. */
export const isUiPath = (path: string) => /^\/dashboard\/apps\/[^/]+\/spark-ui(\/|$)/.test(path);

/**
 * Whether the path (as the driver's Jetty reads it: decoded once, `;params` dropped, any case)
 * names a kill endpoint (`/jobs/job/kill/`, `/stages/stage/kill/`, any segment `kill`);
 * `undefined` when it cannot be decoded (refused as a whole).
 */
export function isKillPath(rest: string): boolean | undefined {
  let decoded: string;
  try { decoded = decodeURIComponent(rest); } catch { return undefined; }
  return decoded.split('/').some((segment) => segment.split(';', 1)[0]!.trim().toLowerCase() === 'kill');
}

/**
 * Spark's own static files (styles, scripts, images): a sandboxed page fetches them without any
 * cookie, so on one host they are served without one. Only plain file paths, GET or HEAD.
 */
export const isStaticAsset = (method: string, rest: string, query: string) =>
  (method === 'GET' || method === 'HEAD') && query === '' && SPARK_STATIC_PATH.test(rest);

/**
 * Whether the browser says the request comes from a page of this application's UI on the same
 * origin (Sec-Fetch-Site, with the Referer under its prefix): what a kill link needs besides a
 * cookie, and on the Spark UI host what keeps one application's page from reading another's.
 */
export function fromThisUi(headers: Record<string, string | string[] | undefined>, prefix: string): boolean {
  if (headers['sec-fetch-site'] !== 'same-origin') return false;
  const referer = typeof headers.referer === 'string' ? headers.referer : '';
  try {
    const url = new URL(referer);
    return url.host === headers.host && url.pathname.startsWith(`${prefix}/`);
  } catch {
    return false;
  }
}

/** Set-Cookie of the UI cookie, scoped to one application's proxy path; Lax: top-level navigations carry it, fetches of a sandboxed page do not. */
export function uiCookie(prefix: string, token: string, secure: boolean): string {
  return `${UI_COOKIE}=${token}; Path=${prefix}/; HttpOnly; SameSite=Lax; Max-Age=${Math.floor(UI_TTL_MS / 1000)}${secure ? '; Secure' : ''}`;
}
