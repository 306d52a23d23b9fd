// /dashboard/apps/{appName}/spark-ui/…: the running driver's Spark UI, through the service
// (http-proxy), behind the same authentication as the dashboard (session cookie or API key).
// Admission sets spark.ui.proxyBase to this path (sparkUiPath in webhook/domain/spark-properties.ts), so the
// UI's own links and redirects stay under it; the proxy strips it before forwarding.
// Read-only: GET and HEAD (the UI's kill buttons would bypass the API's roles). Once the driver
// has ended, the same paths open the run's history (history-ui.ts).
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import httpProxy from 'http-proxy';
import type { Cluster } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import type { ApiKeyIdentity } from '../submit-api/auth/key-store.js';
import { keyFromHeaders, type KeyVerifier } from '../submit-api/auth/plugin.js';
import { historyRequest } from './history-ui.js';

export interface SparkUiProxyOptions {
  cluster: Cluster;
  /** Where an ended run's UI is served from (history-ui.ts); absent: only live UIs. */
  history?: SparkHistory;
  auth: { enabled: boolean; store: KeyVerifier };
  sessionIdentity: (request: FastifyRequest) => ApiKeyIdentity | undefined;
}

// What the browser sent us for us alone: the driver gets none of it.
const PRIVATE_HEADERS = ['cookie', 'authorization', 'x-api-key', 'x-requested-with'];

/** The raw (still encoded) path after `/dashboard/apps/{appName}/spark-ui`: what the driver serves. */
function rawRest(path: string): string {
  const match = /^\/dashboard\/apps\/[^/]+\/spark-ui(\/.*)?$/.exec(path);
  return match?.[1] ?? '';
}

function fail(reply: FastifyReply, statusCode: number, message: string) {
  const error = { 401: 'Unauthorized', 404: 'Not Found', 502: 'Bad Gateway' }[statusCode] ?? 'Error';
  return reply.code(statusCode).type('application/json').send({ message, statusCode, error });
}

export const sparkUiProxy: FastifyPluginAsync<SparkUiProxyOptions> = async (app, opts) => {
  const proxy = httpProxy.createProxyServer({ xfwd: false, proxyTimeout: 30_000 });
  // Spark writes its links with proxyBase but not its redirects (`/` → http://driver:port/jobs/):
  // a redirect to the driver itself is turned into one under this request's prefix.
  const prefixes = new WeakMap<IncomingMessage, { prefix: string; target: URL }>();
  proxy.on('proxyRes', (proxyRes, req) => {
    const location = proxyRes.headers.location;
    const at = prefixes.get(req);
    if (!location || !at) return;
    const url = new URL(location, at.target);
    // Jetty makes the Location absolute with the Host header it got (ours) or its own address.
    if (url.host !== at.target.host && url.host !== req.headers.host) return;
    const path = url.pathname.startsWith(`${at.prefix}/`) ? url.pathname : `${at.prefix}${url.pathname}`;
    proxyRes.headers.location = `${path}${url.search}`;
  });
  proxy.on('error', (error, req, res) => {
    app.log.warn({ url: req.url, err: error.message }, 'Spark UI proxy: the driver did not answer');
    if ('writeHead' in res && !res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `The Spark UI did not answer (${error.message}); it starts a few seconds after the driver.`, statusCode: 502, error: 'Bad Gateway' }));
    } else {
      res.destroy();
    }
  });
  app.addHook('onClose', async () => { proxy.close(); });

  const handler = async (request: FastifyRequest<{ Params: { appName: string } }>, reply: FastifyReply) => {
    const { appName } = request.params;
    const raw = request.raw.url ?? '';
    const [path, query] = [raw.split('?', 1)[0], raw.includes('?') ? raw.slice(raw.indexOf('?')) : ''];
    // From the raw URL, not the route's wildcard: the router drops trailing slashes, the UI needs them.
    const rest = rawRest(path);
    // The bare path: to the UI's root, so that relative links resolve under it.
    if (rest === '') return reply.redirect(`${path}/${query}`);
    if (opts.auth.enabled) {
      const key = keyFromHeaders(request.headers);
      const identity = key ? opts.auth.store.verify(key) : opts.sessionIdentity(request);
      if (!identity) return fail(reply, 401, 'Sign in to the dashboard (or send an API key) to open the Spark UI.');
    }
    const prefix = path.slice(0, path.length - rest.length);
    const live = await opts.cluster.sparkUiTarget(appName);
    const history = live ? undefined : await historyRequest(opts, appName, rest, prefix, request.raw);
    if (history && 'refused' in history) return fail(reply, 404, history.refused);
    const target = live ?? history?.target;
    if (!target) return fail(reply, 404, `The Spark UI of ${appName} is available while it runs${opts.history ? ' and, after it ended, from its event log' : ''}; it is not running and has no history (or is unknown).`);
    // The driver serves its UI at /; the links it writes start with proxyBase (our prefix).
    prefixes.set(request.raw, { prefix, target });
    request.raw.url = `${history?.path ?? rest}${query}`;
    for (const header of PRIVATE_HEADERS) delete request.raw.headers[header];
    reply.hijack();
    proxy.web(request.raw, reply.raw, { target: target.href });
    return reply;
  };
  for (const url of ['/dashboard/apps/:appName/spark-ui', '/dashboard/apps/:appName/spark-ui/*']) {
    app.route({ method: ['GET', 'HEAD'], url, schema: { hide: true }, handler });
  }
};
