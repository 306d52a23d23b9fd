// /dashboard/apps/{appName}/spark-ui/…: the running driver's Spark UI, through the service
// (http-proxy). Admission sets spark.ui.proxyBase to this path (sparkUiPath in
// domain/spark-properties.ts), so the UI's own links and redirects stay under it; the
// proxy strips it before forwarding. GET and HEAD only. Who may open it and what its pages may
// do: spark-ui-access.ts. Once the driver has
// ended, the same paths open the run's history (history-ui.ts), from the proxy's cache once the
// run's log is final (history-cache.ts), after the same checks.
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import httpProxy from 'http-proxy';
import { type Cluster, isTerminal } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import type { KeyVerifier } from '../submit-api/auth/plugin.js';
import { acceptsGzip, cacheKey, collectAnswer, HistoryPageCache, sendCached, STATIC_CACHE_CONTROL } from './history-cache.js';
import { historyPath } from './history-paths.js';
import { prefillHistory } from './history-prefill.js';
import { historyRequest, ownRunList } from './history-ui.js';
import { connectionOwner, ConnectionSlots } from '../lib/connection-slots.js';
import { hostName } from '../submit-api/host-allowlist.js';
import { mayActOnApplication, type SubmissionPolicy } from '../domain/index.js';
import type { Sessions } from './session.js';
import {
  GRANT_PARAM, HANDOVER_AUDIENCE, UI_AUDIENCE, UI_TTL_MS,
  VIEWER_HEADERS_DROPPED, appOfUiHost, forViewer, fromThisUi, isKillPath, isStaticAsset, uiCookie, uiPrefix,
} from './spark-ui-access.js';
import { callerOf, toUiHost, uiOriginRefusal, withoutGrant } from './spark-ui-caller.js';
import { fail, failRaw } from './spark-ui-errors.js';
import { defaultSparkUiLimits, ProxiedAnswer, type SparkUiLimits } from './spark-ui-limits.js';
import {
  isRewritablePage, linkRewrites, passOnRewritten, rewriteAnswerBody, staticAsset, versionedStaticPath,
} from './spark-ui-static.js';

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
/** Answers collected for the cache at the same time (so at most this many entry caps in flight). */
const MAX_COLLECTING = 8;

/** What a proxied request's answer needs: its prefix and target (redirects), and where the history's answer goes. */
interface Proxied {
  prefix: string; target: URL; fromHistory: boolean; cacheAs?: string; staticFile: boolean; answer: ProxiedAnswer;
  /** The page's static links as they are rewritten (spark-ui-static.ts); the proxy then passes the answer on itself. */
  rewrite?: { from: string; to: string };
}

/** The raw (still encoded) path after `/dashboard/apps/{appName}/spark-ui`: what the driver serves. */
function rawRest(path: string): string {
  const match = /^\/dashboard\/apps\/[^/]+\/spark-ui(\/.*)?$/.exec(path);
  return match?.[1] ?? '';
}

/**
 * Spark writes its links with proxyBase but not its redirects (`/` → http://driver:port/jobs/):
 * a redirect to the driver itself is turned into one under the request's prefix.
 */
function redirectUnderPrefix(answer: IncomingMessage, req: IncomingMessage, at: Proxied | undefined): void {
  const location = answer.headers.location;
  if (!location || !at) return;
  const url = new URL(location, at.target);
  // Jetty makes the Location absolute with the Host header it got (ours) or its own address.
  if (url.host !== at.target.host && url.host !== req.headers.host) return;
  const path = url.pathname.startsWith(`${at.prefix}/`) ? url.pathname : `${at.prefix}${url.pathname}`;
  answer.headers.location = `${path}${url.search}`;
}

export const sparkUiProxy: FastifyPluginAsync<SparkUiProxyOptions> = async (app, opts) => {
  const { sessions } = opts;
  const uiHostName = opts.uiHost === undefined ? undefined : hostName(opts.uiHost);
  const proxy = httpProxy.createProxyServer({ xfwd: false, proxyTimeout: 30_000 });
  const limits = { ...defaultSparkUiLimits, ...opts.limits };
  const inFlight = new ConnectionSlots(limits.requestsPerKey);
  // With authentication off there is no session or key a page could use that any client could
  // not use anyway: the sandbox would protect nothing and cost the UI its scripted tables.
  const sandboxed = uiHostName === undefined && opts.auth.enabled;
  const cacheBytes = opts.historyCacheBytes ?? HISTORY_CACHE_BYTES;
  const cache = opts.history && cacheBytes > 0 ? new HistoryPageCache({ maxBytes: cacheBytes, maxEntryBytes: HISTORY_CACHE_ENTRY_BYTES }) : undefined;
  // As soon as a run is replayed, the pages opened first go into the cache (history-prefill.ts).
  // A History Server renders every run with its own Spark's files: its pages' links name its version.
  const { rewriteFor, historyRewrite } = linkRewrites(opts.sparkStatic);
  const unsubscribe = cache && opts.history?.onWarmed(async (appName, target, signal) => {
    const prefix = uiPrefix(appName);
    await prefillHistory({ cache, target, prefix, sandboxed, signal, rewrite: await historyRewrite(prefix, target.server, target.headers) });
  });
  const proxied = new WeakMap<IncomingMessage, Proxied>();
  const collecting = new Set<string>();
  proxy.on('proxyReq', (proxyReq, req) => proxied.get(req)?.answer.started(proxyReq));
  proxy.on('proxyRes', (proxyRes, req, res) => {
    forViewer(proxyRes.headers, sandboxed);
    const at = proxied.get(req);
    redirectUnderPrefix(proxyRes, req, at);
    at?.answer.answered(proxyRes);
    // Spark's own files from the History Server (it says no-store) may be kept by the browser.
    if (at?.fromHistory && at.staticFile && proxyRes.statusCode === 200) proxyRes.headers['cache-control'] = STATIC_CACHE_CONTROL;
    // Kept as it streams by: one copy per key at a time, and a few at once (each up to the entry cap).
    const key = at?.cacheAs;
    if (key && cache && !collecting.has(key) && collecting.size < MAX_COLLECTING) {
      collecting.add(key);
      const rewrite = at?.rewrite && isRewritablePage(proxyRes.statusCode, proxyRes.headers) ? at.rewrite : undefined;
      void collectAnswer(proxyRes, cache.maxEntryBytes).then((body) => {
        collecting.delete(key);
        // Kept as the viewer got it: the page's links rewritten.
        try {
          if (body) cache.set(key, proxyRes.headers, rewrite ? rewriteAnswerBody(body, proxyRes.headers['content-encoding'], rewrite) : body);
        } catch (error) {
          app.log.warn({ err: error }, 'Spark UI proxy: a history page could not be kept');
        }
      });
    }
    if (at?.rewrite) passOnRewritten(proxyRes, res, req.method ?? 'GET', at.rewrite);
  });
  proxy.on('error', (error, req, res) => {
    // The viewer left or the answer was cut: the upstream request was destroyed on purpose.
    if (proxied.get(req)?.answer.ended) return;
    app.log.warn({ url: req.url, err: error.message }, 'Spark UI proxy: the driver did not answer');
    if ('writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `The Spark UI did not answer (${error.message}); it starts a few seconds after the driver.`, statusCode: 502, error: 'Bad Gateway' }));
    } else {
      res.destroy();
    }
  });
  app.addHook('onClose', async () => { unsubscribe?.(); cache?.clear(); proxy.close(); });


  const handler = async (request: FastifyRequest<{ Params: { appName: string } }>, reply: FastifyReply) => {
    const { appName } = request.params;
    const raw = request.raw.url ?? '';
    const [path, query] = [raw.split('?', 1)[0]!, raw.includes('?') ? raw.slice(raw.indexOf('?')) : ''];
    // From the raw URL, not the route's wildcard: the router drops trailing slashes, the UI needs them.
    const rest = rawRest(path);
    // The bare path: to the UI's root, so that relative links resolve under it.
    if (rest === '') return reply.redirect(`${path}/${query}`);
    const prefix = path.slice(0, path.length - rest.length);
    const onUiHost = uiHostName !== undefined && appOfUiHost(hostName(request.headers.host ?? ''), uiHostName) !== undefined;
    const refusal = onUiHost ? uiOriginRefusal(request, appName, uiHostName!) : undefined;
    if (refusal) return fail(reply, refusal.status, refusal.message);
    const secure = request.protocol === 'https';
    if (request.headers['service-worker'] !== undefined) return fail(reply, 403, 'A Spark UI cannot install a service worker.');
    const kill = isKillPath(rest);
    if (kill === undefined) return fail(reply, 400, 'The path cannot be decoded.');
    // Spark's static files by version: from that version's files, whoever asks, for any name.
    const versioned = isStaticAsset(request.method, rest, query) ? versionedStaticPath(rest) : undefined;
    if (versioned) return staticAsset(request, reply, versioned.file, { sparkStatic: opts.sparkStatic, version: versioned.version, sandboxed });

    // The Spark UI host: a grant from the service's host becomes this host's cookie.
    const grant = onUiHost ? new URLSearchParams(query).get(GRANT_PARAM) : null;
    if (grant !== null && opts.auth.enabled) {
      const identity = sessions.identityOfGrant(grant, HANDOVER_AUDIENCE, appName);
      if (!identity) return fail(reply, 401, 'The link to the Spark UI has expired: open it again from the dashboard.');
      reply.header('set-cookie', uiCookie(prefix, sessions.grant(identity.id, UI_AUDIENCE, appName, UI_TTL_MS), secure));
      return reply.header('referrer-policy', 'no-referrer').redirect(`${path}${withoutGrant(query)}`);
    }

    const who = callerOf(opts, request, appName, onUiHost);
    if (!who) {
      // A sandboxed page fetches Spark's styles and scripts without any cookie.
      const asset = uiHostName === undefined && isStaticAsset(request.method, rest, query);
      if (!asset) return fail(reply, 401, 'Sign in to the dashboard (or send an API key) to open the Spark UI.');
      return staticAsset(request, reply, rest, { sparkStatic: opts.sparkStatic, cache, sandboxed });
    }
    const record = await opts.cluster.get(appName);
    if (!record) return fail(reply, 404, `There is no application ${appName}: it is not running and has no history (never submitted, deleted, or past its retention).`);
    if (who && !mayActOnApplication(who.identity, record, opts.policy)) {
      return fail(reply, 403, `Only the key that submitted ${appName} (or claimed it, a warm pool's kernel), or an admin, may open its Spark UI.`);
    }
    // A cookie alone would let any page navigate the viewer to a kill link: a kill must come from
    // this application's own UI page on the same origin (the Spark UI host), or with an API key.
    if (kill && who?.via !== 'key' && !fromThisUi(request.headers, prefix)) {
      return fail(reply, 403, 'Spark\'s kill links work through the proxy only from the Spark UI\'s own host (--spark-ui-host) or with an API key; stop the application instead (POST /api/apps/{app}/stop).');
    }
    if (uiHostName !== undefined && !onUiHost) return toUiHost(request, reply, { uiHost: opts.uiHost!, sessions, appName, path, query, identity: who.identity });
    // Each page opened with the dashboard's session or the cookie renews the cookie.
    const renewCookie = () => {
      if (who?.identity && who.via !== 'key' && request.headers['sec-fetch-mode'] === 'navigate') {
        reply.raw.setHeader('set-cookie', uiCookie(prefix, sessions.grant(who.identity.id, UI_AUDIENCE, appName, UI_TTL_MS), secure));
      }
    };
    // Only here, past every check above: an ended run's page from the cache.
    const run = cache && isTerminal(record.state) ? opts.history?.run(appName) : undefined;
    const runPath = run && historyPath(rest, run.sparkAppId);
    const cacheAs = runPath ? cacheKey({ method: request.method, run, prefix, path: runPath, query, gzip: acceptsGzip(request.headers['accept-encoding']) }) : undefined;
    const cached = cacheAs ? cache?.get(cacheAs) : undefined;
    if (cached) {
      renewCookie();
      reply.hijack();
      sendCached(reply.raw, request.method, cached);
      return reply;
    }
    const live = await opts.cluster.sparkUiTarget(appName);
    const history = live ? undefined : await historyRequest(opts, appName, rest, prefix, request.raw);
    if (history && 'refused' in history) return fail(reply, 404, history.refused);
    if (history?.ownRun) {
      const runs = await ownRunList(history.target, history.path, AbortSignal.timeout(10_000), history.headers);
      if (!runs) return fail(reply, 502, `The History Server did not describe the run of ${appName}.`);
      return reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-store').send(runs);
    }
    const target = live ?? history?.target;
    if (!target) return fail(reply, 404, `The Spark UI of ${appName} is available while it runs${opts.history ? ' and, after it ended, from its event log' : ''}; it is not running and has no history (or is unknown).`);
    const staticFile = isStaticAsset(request.method, rest, query);
    // The page's static links name its Spark: the run's own live, the History Server's from the history.
    const rewrite = staticFile ? undefined
      : history ? await historyRewrite(prefix, history.target, history.headers) : await rewriteFor(prefix, record.config.engineVersion);
    // Counted per key (per address without one) until the viewer's response closes.
    const release = inFlight.take(connectionOwner(who?.identity?.id, request.ip), () => reply.raw.destroy());
    if (!release) return fail(reply, 429, `At most ${limits.requestsPerKey} Spark UI requests of one key (or address) at once: wait for the open ones to finish.`);
    reply.raw.once('close', release);
    renewCookie();
    const answer = new ProxiedAnswer(reply.raw, limits, (res) =>
      failRaw(res, 504, `The Spark UI did not finish its answer within ${limits.answerMs / 1000} s.`));
    // The driver serves its UI at /; the links it writes start with proxyBase (our prefix).
    proxied.set(request.raw, {
      answer, prefix, target, fromHistory: history !== undefined, staticFile, rewrite,
      cacheAs: history && request.method === 'GET' && history.path === runPath ? cacheAs : undefined,
    });
    request.raw.url = `${history?.path ?? rest}${query}`;
    for (const header of VIEWER_HEADERS_DROPPED) delete request.raw.headers[header];
    reply.hijack();
    // The gate's secret (local mode: the History Server's, a sandboxed driver's) is added here, past every check, and never echoed.
    const gate = history ? history.headers : opts.cluster.sparkUiHeaders?.(appName);
    proxy.web(request.raw, reply.raw, { target: target.href, headers: gate ? { ...gate } : undefined, selfHandleResponse: rewrite !== undefined });
    return reply;
  };
  for (const url of ['/dashboard/apps/:appName/spark-ui', '/dashboard/apps/:appName/spark-ui/*']) {
    app.route({ method: ['GET', 'HEAD'], url, schema: { hide: true }, handler });
  }
};
