// The forwarding half of the Spark UI proxy (spark-ui-proxy.ts): the http-proxy server and what
// it does with each answer from a driver or the History Server. The route decides what may be
// forwarded and records it per request (Proxied); the events here read that record.
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import httpProxy from 'http-proxy';
import { collectAnswer, type HistoryPageCache, STATIC_CACHE_CONTROL } from './history-cache.js';
import { forViewer } from './spark-ui-access.js';
import type { ProxiedAnswer } from './spark-ui-limits.js';
import { isRewritablePage, passOnRewritten, rewriteAnswerBody } from './spark-ui-static.js';

/** Answers collected for the cache at the same time (so at most this many entry caps in flight). */
const MAX_COLLECTING = 8;

/** What a proxied request's answer needs: its prefix and target (redirects), and where the history's answer goes. */
export interface Proxied {
  prefix: string; target: URL; fromHistory: boolean; cacheAs?: string; staticFile: boolean; answer: ProxiedAnswer;
  /** The page's static links as they are rewritten (spark-ui-static.ts); the proxy then passes the answer on itself. */
  rewrite?: { from: string; to: string };
}

/** The proxy server and the record of each request it forwards (set by the route before `proxy.web`). */
export interface Forwarding {
  proxy: httpProxy;
  proxied: WeakMap<IncomingMessage, Proxied>;
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

/** Keeps an ended run's page as it streams by: one copy per key at a time, and a few at once (each up to the entry cap). */
function keepInCache(answer: IncomingMessage, at: Proxied, cache: HistoryPageCache, collecting: Set<string>, log: FastifyBaseLogger): void {
  const key = at.cacheAs;
  if (!key || collecting.has(key) || collecting.size >= MAX_COLLECTING) return;
  collecting.add(key);
  const rewrite = at.rewrite && isRewritablePage(answer.statusCode, answer.headers) ? at.rewrite : undefined;
  void collectAnswer(answer, cache.maxEntryBytes).then((body) => {
    collecting.delete(key);
    // Kept as the viewer got it: the page's links rewritten.
    try {
      if (body) cache.set(key, answer.headers, rewrite ? rewriteAnswerBody(body, answer.headers['content-encoding'], rewrite) : body);
    } catch (error) {
      log.warn({ err: error }, 'Spark UI proxy: a history page could not be kept');
    }
  });
}

/** The proxy server; `sandboxed`: the viewer's headers are those of a sandboxed page (spark-ui-access.ts). */
export function forwardingProxy(options: { sandboxed: boolean; cache?: HistoryPageCache; log: FastifyBaseLogger }): Forwarding {
  const { sandboxed, cache, log } = options;
  const proxy = httpProxy.createProxyServer({ xfwd: false, proxyTimeout: 30_000 });
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
    if (at && cache) keepInCache(proxyRes, at, cache, collecting, log);
    if (at?.rewrite) passOnRewritten(proxyRes, res, req.method ?? 'GET', at.rewrite);
  });
  proxy.on('error', (error, req, res) => {
    // The viewer left or the answer was cut: the upstream request was destroyed on purpose.
    if (proxied.get(req)?.answer.ended) return;
    log.warn({ url: req.url, err: error.message }, 'Spark UI proxy: the driver did not answer');
    if ('writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `The Spark UI did not answer (${error.message}); it starts a few seconds after the driver.`, statusCode: 502, error: 'Bad Gateway' }));
    } else {
      res.destroy();
    }
  });
  return { proxy, proxied };
}
