// The web dashboard at /dashboard/: plain HTML/CSS/JS served by the service itself, reading the
// public REST API from the browser. With authentication on, the page asks for a key once
// (POST /dashboard/login) and gets a signed session cookie (session.ts) that the auth plugin
// accepts through its sessionVerifier hook; the key itself never goes back to the browser.
// Registered by the composition root (cli/service.ts), after the API.
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import type { Cluster } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import { packageRoot } from '../lib/package-root.js';
import { CSRF_HEADER, type KeyVerifier } from '../submit-api/auth/plugin.js';
import { hostName } from '../submit-api/host-allowlist.js';
import { defaultPolicy, type SubmissionPolicy } from '../domain/index.js';
import type { Sessions } from './session.js';
import { appOfUiHost, isUiPath } from './spark-ui-access.js';
import type { SparkUiLimits } from './spark-ui-limits.js';
import { sparkUiProxy, type SparkStaticSource } from './spark-ui-proxy.js';

export interface DashboardOptions {
  auth: { enabled: boolean; store: KeyVerifier };
  sessions: Sessions;
  cluster: Cluster;
  /** Ended runs' Spark UIs (the History Server), served under the same link as the live one. */
  history?: SparkHistory;
  /** Who may open which application's Spark UI: the API's policy (domain/policy.ts). */
  policy?: SubmissionPolicy;
  /** A host of its own for proxied Spark UIs (`name` or `name:port`); absent: the service's host, sandboxed. */
  sparkUiHost?: string;
  /** Proxied Spark UI requests per key, an answer's time and bytes (spark-ui-limits.ts). */
  sparkUiLimits?: Partial<SparkUiLimits>;
  /** Spark's own static files, served without a cookie for any application name (spark-ui-proxy.ts). */
  sparkStatic?: SparkStaticSource;
}

const STATIC_DIR = join(packageRoot, 'dashboard', 'static');
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};
// No inline script or style anywhere, so the policy can be strict.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** uPlot, the job page's chart library: its built files, served from the installed package. */
const UPLOT_FILES = ['uPlot.iife.min.js', 'uPlot.min.css'];

function loadStatic(): Map<string, { body: Buffer; type: string }> {
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const name of readdirSync(STATIC_DIR)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(join(STATIC_DIR, name)), type });
  }
  const uplotDist = dirname(createRequire(import.meta.url).resolve('uplot'));
  for (const name of UPLOT_FILES) files.set(name, { body: readFileSync(join(uplotDist, name)), type: TYPES[extname(name)]! });
  return files;
}

const dashboard: FastifyPluginAsync<DashboardOptions> = async (app, opts) => {
  const { sessions } = opts;
  const files = loadStatic();
  await app.register(sparkUiProxy, { cluster: opts.cluster, history: opts.history, auth: opts.auth, sessions, policy: opts.policy ?? defaultPolicy, uiHost: opts.sparkUiHost, limits: opts.sparkUiLimits, sparkStatic: opts.sparkStatic });
  if (opts.sparkUiHost !== undefined) {
    // The Spark UI host and the hosts under it (one per application) serve Spark UIs and nothing
    // else: their pages are the drivers', so the API and the dashboard must not be on their origin.
    const uiHostName = hostName(opts.sparkUiHost);
    app.addHook('onRequest', async (request, reply) => {
      if (appOfUiHost(hostName(request.headers.host ?? ''), uiHostName) === undefined || isUiPath(request.url.split('?', 1)[0]!)) return;
      return reply.code(404).type('application/json').send({ message: 'This host serves Spark UIs only.', statusCode: 404, error: 'Not Found' });
    });
  }

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

  // The same page for the list, each application and each job; the script routes on the path.
  app.get('/dashboard/', hide, async (_request, reply) => page(reply));
  app.get('/dashboard/apps/:appName', hide, async (_request, reply) => page(reply));
  app.get('/dashboard/jobs/:jobName', hide, async (_request, reply) => page(reply));

  app.get<{ Params: { file: string } }>('/dashboard/static/:file', hide, async (request, reply) => {
    const file = files.get(request.params.file);
    if (!file) return reply.code(404).send({ message: 'Not found', statusCode: 404, error: 'Not Found' });
    return reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').type(file.type).send(file.body);
  });

  // What the page needs to know before it calls the API.
  app.get('/dashboard/session', hide, async (request) => {
    const identity = opts.auth.enabled ? sessions.verify(request) : undefined;
    return {
      authEnabled: opts.auth.enabled,
      signedIn: !opts.auth.enabled || identity !== undefined,
      keyId: identity?.id ?? null,
      role: identity?.role ?? null,
      csrfHeader: CSRF_HEADER,
    };
  });

  app.post<{ Body: { key?: unknown } }>('/dashboard/login', {
    schema: {
      hide: true,
      body: { type: 'object', required: ['key'], properties: { key: { type: 'string', minLength: 1, maxLength: 512 } } },
    },
  }, async (request, reply) => {
    if (!opts.auth.enabled) return { signedIn: true, keyId: null, role: null };
    const key = String(request.body.key).trim();
    const identity = opts.auth.store.verify(key);
    if (!identity) {
      return reply.code(401).send({ message: 'The API key is not valid (unknown or revoked).', statusCode: 401, error: 'Unauthorized' });
    }
    // request.protocol is https behind a TLS proxy only when that proxy is trusted (--trust-proxy).
    reply.header('set-cookie', sessions.cookie(sessions.issue(identity.id), request.protocol === 'https'));
    return { signedIn: true, keyId: identity.id, role: identity.role };
  });

  // The cookie is stateless: signing out removes it from this browser (a copy taken elsewhere
  // stays valid until it expires, unless its key is revoked, which ends it everywhere at once).
  app.post('/dashboard/logout', hide, async (request, reply) => {
    reply.header('set-cookie', sessions.clearCookie(request.protocol === 'https'));
    return { signedIn: false };
  });
};

export const dashboardPlugin = fp(dashboard, { name: 'submission-service-dashboard', fastify: '5.x' });
export default dashboardPlugin;
