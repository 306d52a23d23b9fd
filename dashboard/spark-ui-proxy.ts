// /dashboard/apps/{appName}/spark-ui/…: the running driver's Spark UI, through the service
// (http-proxy). Admission sets spark.ui.proxyBase to this path (sparkUiPath in
// domain/spark-properties.ts), so the UI's own links and redirects stay under it; the
// proxy strips it before forwarding. GET and HEAD only. Who may open it and what its pages may
// do: spark-ui-access.ts. Once the driver has
// ended, the same paths open the run's history (history-ui.ts), from the proxy's cache once the
// run's log is final (history-cache.ts), after the same checks.
// This file is the route, in the order of its checks; the http-proxy server and what it does
// with each answer: spark-ui-forward.ts.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { type AppRecord, type Cluster, isTerminal } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import type { KeyVerifier } from '../submit-api/auth/plugin.js';
import { acceptsGzip, cacheKey, HistoryPageCache, sendCached } from './history-cache.js';
import { historyPath } from './history-paths.js';
import { prefillHistory } from './history-prefill.js';
import { historyRequest, type HistoryRequest, ownRunList } from './history-ui.js';
import { connectionOwner, ConnectionSlots } from '../lib/connection-slots.js';
import { hostName } from '../submit-api/host-allowlist.js';
import { mayActOnApplication, type SubmissionPolicy } from '../domain/index.js';
import type { Sessions } from './session.js';
import {
  GRANT_PARAM, HANDOVER_AUDIENCE, UI_AUDIENCE, UI_TTL_MS,
  VIEWER_HEADERS_DROPPED, appOfUiHost, fromThisUi, isKillPath, isStaticAsset, uiCookie, uiPrefix,
} from './spark-ui-access.js';
import { callerOf, toUiHost, uiOriginRefusal, withoutGrant } from './spark-ui-caller.js';
import { fail, failRaw } from './spark-ui-errors.js';
import { defaultSparkUiLimits, ProxiedAnswer, type SparkUiLimits } from './spark-ui-limits.js';
import { linkRewrites, staticAsset, versionedStaticPath } from './spark-ui-static.js';
import { type Forwarding, forwardingProxy } from './spark-ui-forward.js';

export interface SparkUiProxyOptions {
  cluster: Cluster;
  /** Where an ended run's UI is served from (history-ui.ts); absent: only live UIs. */
  history?: SparkHistory;
  auth: { enabled: boolean; store: KeyVerifier };
  sessions: Sessions;
  policy: SubmissionPolicy;
  /** The Spark UIs' own host (`name` or `name:port`), each application's on `<app>.name`; absent: served on the service's host, sandboxed when authentication is on. */
  uiHost?: string;
  /**
   * Spark's own static files by version (local mode: cluster/local/spark-static.ts); given, the
   * pages' links name their Spark version (spark-ui-static.ts), answered from here alone.
   */
  sparkStatic?: SparkStaticSource;
  /** Bytes of ended runs' pages kept in memory (history-cache.ts); 0: none. */
  historyCacheBytes?: number;
  /** Proxied requests per key, an answer's time and bytes (spark-ui-limits.ts). */
  limits?: Partial<SparkUiLimits>;
}

/** Spark's static file `rest` (`/static/…`) of Spark `version` (undefined: the installation's own); undefined: none such, or not at hand. */
export type SparkStaticSource = (rest: string, version?: string) => Promise<{ body: Buffer; contentType: string } | undefined>;

/** The history page cache's default size, and the biggest answer it keeps. */
export const HISTORY_CACHE_BYTES = 64 * 1024 * 1024;
const HISTORY_CACHE_ENTRY_BYTES = 4 * 1024 * 1024;

/** What the route's steps share: the plugin's options and what it made of them once. */
interface Route {
  opts: SparkUiProxyOptions;
  uiHostName?: string;
  sandboxed: boolean;
  cache?: HistoryPageCache;
  limits: SparkUiLimits;
  inFlight: ConnectionSlots;
  forwarding: Forwarding;
  links: ReturnType<typeof linkRewrites>;
}

/** One request to the route as its steps read it; `rest`: the raw path after the prefix (what the driver serves). */
interface Asked {
  request: FastifyRequest<{ Params: { appName: string } }>;
  reply: FastifyReply;
  appName: string; path: string; query: string; rest: string; prefix: string;
  onUiHost: boolean; secure: boolean;
}

type Caller = NonNullable<ReturnType<typeof callerOf>>;
type FromHistory = Exclude<HistoryRequest, { refused: string } | undefined>;

/** The raw (still encoded) path after `/dashboard/apps/{appName}/spark-ui`: what the driver serves. */
function rawRest(path: string): string {
  const match = /^\/dashboard\/apps\/[^/]+\/spark-ui(\/.*)?$/.exec(path);
  return match?.[1] ?? '';
}

function askedOf(route: Route, request: Asked['request'], reply: FastifyReply): Asked {
  const raw = request.raw.url ?? '';
  const [path, query] = [raw.split('?', 1)[0]!, raw.includes('?') ? raw.slice(raw.indexOf('?')) : ''];
  // From the raw URL, not the route's wildcard: the router drops trailing slashes, the UI needs them.
  const rest = rawRest(path);
  const { uiHostName } = route;
  const onUiHost = uiHostName !== undefined && appOfUiHost(hostName(request.headers.host ?? ''), uiHostName) !== undefined;
  return {
    request, reply, appName: request.params.appName, path, query, rest,
    prefix: path.slice(0, path.length - rest.length), onUiHost, secure: request.protocol === 'https',
  };
}

/** The answers given before the caller is known: the origin, service workers, Spark's versioned files, the UI host's grant. */
function beforeCaller(route: Route, asked: Asked): FastifyReply | Promise<FastifyReply> | undefined {
  const { opts, uiHostName, sandboxed } = route;
  const { request, reply, appName, rest, query, prefix, path } = asked;
  const refusal = asked.onUiHost ? uiOriginRefusal(request, appName, uiHostName!) : undefined;
  if (refusal) return fail(reply, refusal.status, refusal.message);
  if (request.headers['service-worker'] !== undefined) return fail(reply, 403, 'A Spark UI cannot install a service worker.');
  if (isKillPath(rest) === undefined) return fail(reply, 400, 'The path cannot be decoded.');
  // Spark's static files by version: from that version's files, whoever asks, for any name.
  const versioned = isStaticAsset(request.method, rest, query) ? versionedStaticPath(rest) : undefined;
  if (versioned) return staticAsset(request, reply, versioned.file, { sparkStatic: opts.sparkStatic, version: versioned.version, sandboxed });
  // The Spark UI host: a grant from the service's host becomes this host's cookie.
  const grant = asked.onUiHost ? new URLSearchParams(query).get(GRANT_PARAM) : null;
  if (grant === null || !opts.auth.enabled) return undefined;
  const identity = opts.sessions.identityOfGrant(grant, HANDOVER_AUDIENCE, appName);
  if (!identity) return fail(reply, 401, 'The link to the Spark UI has expired: open it again from the dashboard.');
  reply.header('set-cookie', uiCookie(prefix, opts.sessions.grant(identity.id, UI_AUDIENCE, appName, UI_TTL_MS), asked.secure));
  return reply.header('referrer-policy', 'no-referrer').redirect(`${path}${withoutGrant(query)}`);
}

/** Why this caller may not open this application's UI (or this kill link); undefined: it may. */
function accessRefusal(route: Route, asked: Asked, who: Caller, record: AppRecord | undefined): FastifyReply | undefined {
  const { request, reply, appName } = asked;
  if (!record) return fail(reply, 404, `There is no application ${appName}: it is not running and has no history (never submitted, deleted, or past its retention).`);
  if (who && !mayActOnApplication(who.identity, record, route.opts.policy)) {
    return fail(reply, 403, `Only the key that submitted ${appName} (or claimed it, a warm pool's kernel), or an admin, may open its Spark UI.`);
  }
  // A cookie alone would let any page navigate the viewer to a kill link: a kill must come from
  // this application's own UI page on the same origin (the Spark UI host), or with an API key.
  if (isKillPath(asked.rest) && who?.via !== 'key' && !fromThisUi(request.headers, asked.prefix)) {
    return fail(reply, 403, 'Spark\'s kill links work through the proxy only from the Spark UI\'s own host (--spark-ui-host) or with an API key; stop the application instead (POST /api/apps/{app}/stop).');
  }
  return undefined;
}

/** Each page opened with the dashboard's session or the cookie renews the cookie. */
function renewCookie(route: Route, asked: Asked, who: Caller): void {
  const { request, reply, appName, prefix, secure } = asked;
  if (who?.identity && who.via !== 'key' && request.headers['sec-fetch-mode'] === 'navigate') {
    reply.raw.setHeader('set-cookie', uiCookie(prefix, route.opts.sessions.grant(who.identity.id, UI_AUDIENCE, appName, UI_TTL_MS), secure));
  }
}

/** The caller known and allowed: the page from the cache, the live driver or the run's history. */
async function forCaller(route: Route, asked: Asked): Promise<FastifyReply> {
  const { opts, uiHostName, cache } = route;
  const { request, reply, appName, rest, query, prefix, path } = asked;
  const who = callerOf(opts, request, appName, asked.onUiHost);
  if (!who) {
    // A sandboxed page fetches Spark's styles and scripts without any cookie.
    const asset = uiHostName === undefined && isStaticAsset(request.method, rest, query);
    if (!asset) return fail(reply, 401, 'Sign in to the dashboard (or send an API key) to open the Spark UI.');
    return staticAsset(request, reply, rest, { sparkStatic: opts.sparkStatic, cache, sandboxed: route.sandboxed });
  }
  const record = await opts.cluster.get(appName);
  const refused = accessRefusal(route, asked, who, record);
  if (refused || !record) return refused!;
  if (uiHostName !== undefined && !asked.onUiHost) return toUiHost(request, reply, { uiHost: opts.uiHost!, sessions: opts.sessions, appName, path, query, identity: who.identity });
  // Only here, past every check above: an ended run's page from the cache.
  const run = cache && isTerminal(record.state) ? opts.history?.run(appName) : undefined;
  const runPath = run && historyPath(rest, run.sparkAppId);
  const cacheAs = runPath ? cacheKey({ method: request.method, run, prefix, path: runPath, query, gzip: acceptsGzip(request.headers['accept-encoding']) }) : undefined;
  const cached = cacheAs ? cache?.get(cacheAs) : undefined;
  if (cached) {
    renewCookie(route, asked, who);
    reply.hijack();
    sendCached(reply.raw, request.method, cached);
    return reply;
  }
  const live = await opts.cluster.sparkUiTarget(appName);
  const history = live ? undefined : await historyRequest(opts, appName, rest, prefix, request.raw);
  if (history && 'refused' in history) return fail(reply, 404, history.refused);
  if (history?.ownRun) return ownRun(asked, history);
  const target = live ?? history?.target;
  if (!target) return fail(reply, 404, `The Spark UI of ${appName} is available while it runs${opts.history ? ' and, after it ended, from its event log' : ''}; it is not running and has no history (or is unknown).`);
  // Kept only when the request is the run's page the cache key names.
  const keepAs = history && request.method === 'GET' && history.path === runPath ? cacheAs : undefined;
  return forward(route, asked, { who, record, target, history, keepAs });
}

/** The run's own entry of the History Server's run list (history-ui.ts), answered here. */
async function ownRun(asked: Asked, history: FromHistory): Promise<FastifyReply> {
  const runs = await ownRunList(history.target, history.path, AbortSignal.timeout(10_000), history.headers);
  if (!runs) return fail(asked.reply, 502, `The History Server did not describe the run of ${asked.appName}.`);
  return asked.reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store').send(runs);
}

/** Hands the request to the proxy: counted, timed, its links rewritten, the gate's secret added. */
async function forward(
  route: Route, asked: Asked,
  to: { who: Caller; record: AppRecord; target: URL; history: FromHistory | undefined; keepAs: string | undefined },
): Promise<FastifyReply> {
  const { opts, limits, forwarding } = route;
  const { request, reply, appName, rest, query, prefix } = asked;
  const { who, history, target } = to;
  const staticFile = isStaticAsset(request.method, rest, query);
  // The page's static links name its Spark: the run's own live, the History Server's from the history.
  const rewrite = staticFile ? undefined
    : history ? await route.links.historyRewrite(prefix, history.target, history.headers) : await route.links.rewriteFor(prefix, to.record.config.engineVersion);
  // Counted per key (per address without one) until the viewer's response closes.
  const release = route.inFlight.take(connectionOwner(who?.identity?.id, request.ip), () => reply.raw.destroy());
  if (!release) return fail(reply, 429, `At most ${limits.requestsPerKey} Spark UI requests of one key (or address) at once: wait for the open ones to finish.`);
  reply.raw.once('close', release);
  renewCookie(route, asked, who);
  const answer = new ProxiedAnswer(reply.raw, limits, (res) =>
    failRaw(res, 504, `The Spark UI did not finish its answer within ${limits.answerMs / 1000} s.`));
  // The driver serves its UI at /; the links it writes start with proxyBase (our prefix).
  forwarding.proxied.set(request.raw, { answer, prefix, target, fromHistory: history !== undefined, staticFile, rewrite, cacheAs: to.keepAs });
  request.raw.url = `${history?.path ?? rest}${query}`;
  for (const header of VIEWER_HEADERS_DROPPED) delete request.raw.headers[header];
  reply.hijack();
  // The gate's secret (local mode: the History Server's, a sandboxed driver's) is added here, past every check, and never echoed.
  const gate = history ? history.headers : opts.cluster.sparkUiHeaders?.(appName);
  forwarding.proxy.web(request.raw, reply.raw, { target: target.href, headers: gate ? { ...gate } : undefined, selfHandleResponse: rewrite !== undefined });
  return reply;
}

export const sparkUiProxy: FastifyPluginAsync<SparkUiProxyOptions> = async (app, opts) => {
  const uiHostName = opts.uiHost === undefined ? undefined : hostName(opts.uiHost);
  const limits = { ...defaultSparkUiLimits, ...opts.limits };
  // With authentication off there is no session or key a page could use that any client could
  // not use anyway: the sandbox would protect nothing and cost the UI its scripted tables.
  const sandboxed = uiHostName === undefined && opts.auth.enabled;
  const cacheBytes = opts.historyCacheBytes ?? HISTORY_CACHE_BYTES;
  const cache = opts.history && cacheBytes > 0 ? new HistoryPageCache({ maxBytes: cacheBytes, maxEntryBytes: HISTORY_CACHE_ENTRY_BYTES }) : undefined;
  // A History Server renders every run with its own Spark's files: its pages' links name its version.
  const links = linkRewrites(opts.sparkStatic);
  // As soon as a run is replayed, the pages opened first go into the cache (history-prefill.ts).
  const unsubscribe = cache && opts.history?.onWarmed(async (appName, target, signal) => {
    const prefix = uiPrefix(appName);
    await prefillHistory({ cache, target, prefix, sandboxed, signal, rewrite: await links.historyRewrite(prefix, target.server, target.headers) });
  });
  const forwarding = forwardingProxy({ sandboxed, cache, log: app.log });
  app.addHook('onClose', async () => { unsubscribe?.(); cache?.clear(); forwarding.proxy.close(); });
  const route: Route = { opts, uiHostName, sandboxed, cache, limits, inFlight: new ConnectionSlots(limits.requestsPerKey), forwarding, links };
  const handler = async (request: Asked['request'], reply: FastifyReply) => {
    const asked = askedOf(route, request, reply);
    // The bare path: to the UI's root, so that relative links resolve under it.
    if (asked.rest === '') return reply.redirect(`${asked.path}/${asked.query}`);
    return beforeCaller(route, asked) ?? forCaller(route, asked);
  };
  for (const url of ['/dashboard/apps/:appName/spark-ui', '/dashboard/apps/:appName/spark-ui/*']) {
    app.route({ method: ['GET', 'HEAD'], url, schema: { hide: true }, handler });
  }
};
