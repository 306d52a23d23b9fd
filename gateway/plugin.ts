// The notebook gateway as a fastify plugin under /notebooks/: the Jupyter Kernel Gateway
// protocol jupyter_server's GatewayClient speaks, each kernel an application started through
// the public API. Errors are `{reason, message}`, as the Jupyter server shows them.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { ApiClient } from './api-client.js';
import { authenticate, type GatewayAuthOptions, type GatewayCaller } from './auth.js';
import { attachChannels } from './channels.js';
import { GatewayError, KernelRegistry } from './kernel-registry.js';
import { LauncherAuth } from './launcher-auth.js';
import { LauncherFiles } from './launcher-files.js';
import { DEFAULT_KERNELS_PER_KEY } from './kernel-owners.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import { crossSiteRefusal, type UpgradeGuardOptions } from './upgrade-guard.js';
import { kernelRoutes } from './routes/kernels.js';
import { kernelspecRoutes } from './routes/kernelspecs.js';
import { versionRoutes } from './routes/version.js';
import { SocketSlots } from './socket-slots.js';
import { defaultFairShare } from '../submit-api/fair-share-limits.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key the Jupyter server sent (forwarded to the API), undefined without one. */
    gatewayKey: string | undefined;
    /** The key's id and role (kernels belong to keys: kernel-owners.ts); null with authentication off. */
    gatewayCaller: GatewayCaller;
  }
}

export interface GatewayOptions {
  auth: GatewayAuthOptions;
  /** The API's base URL (this server's own address in local mode: a function, known once it listens). */
  apiUrl: string | (() => string);
  /** The gateway's own key for background work (re-discovery, culling); SUBMISSION_SERVICE_API_KEY. */
  apiKey?: string;
  /** The gateway's address as launchers dial it (ws://host:port/notebooks). */
  launcherUrl: () => string;
  /** `local://` path of launcher.py in the driver. */
  launcherFile: string;
  /** Image of kernel drivers (Spark + ipykernel + launcher), set on every kernel; absent: the template's. */
  kernelImage?: string;
  /** Secret behind the launchers' reconnect credentials (kept across restarts). */
  secret: string;
  /** Shut down kernels idle (no activity, no connection) this long; 0 or absent: never. */
  cullIdleSeconds?: number;
  /** Warm pool sizes per template (kernels started ahead with Spark up); absent or empty: none. */
  warmPool?: Record<string, number>;
  /** Kernels one key may hold at once (kernel-owners.ts); 0: no limit; absent: DEFAULT_KERNELS_PER_KEY. */
  kernelsPerKey?: number;
  /**
   * Local mode: a directory for the launchers' token files and reconnect-secret hashes
   * (launcher-files.ts); absent: the token goes in the driver's env (readable by its owner and
   * admins only) and reconnect secrets are HMACs of `secret`.
   */
  launcherDir?: string;
  /**
   * What a retried kernel's launcher tokens derive from (domain/launcher-credential.ts; the API
   * or local mode's cluster makes them). Absent: `secret` without `launcherDir`, else none.
   */
  attemptSecret?: string;
  /** The API's proof that a submission with kernel labels comes from this gateway (lib/gateway-proof.ts). */
  apiProof?: string;
  /** Jupyter clients' websockets one key (or address, without a key) may hold at once; 0: no cap (default: submit-api/fair-share-limits.ts). */
  websocketsPerKey?: number;
  /** Host names and browser origins websockets are accepted from (upgrade-guard.ts). */
  upgrades?: Omit<UpgradeGuardOptions, 'log'>;
  /** Websocket pings, launch, restart and interrupt timeouts (lifecycle-limits.ts); what is absent keeps its default. */
  lifecycle?: Partial<LifecycleLimits>;
}

function sendGatewayError(reply: FastifyReply, statusCode: number, reason: string, message: string) {
  return reply.code(statusCode).type('application/json').send({ reason, message });
}

const gateway: FastifyPluginAsync<GatewayOptions> = async (app, options) => {
  const files = options.launcherDir ? new LauncherFiles(options.launcherDir) : undefined;
  const launcherAuth = new LauncherAuth(options.secret, files, options.attemptSecret);
  const api = new ApiClient(options.apiUrl, options.apiKey, options.apiProof);
  const lifecycle: LifecycleLimits = { ...DEFAULT_LIFECYCLE, ...options.lifecycle };
  const registry = new KernelRegistry({
    api, auth: launcherAuth, log: app.log, launcherFile: options.launcherFile,
    launcherUrl: options.launcherUrl, kernelImage: options.kernelImage, cullIdleSeconds: options.cullIdleSeconds ?? 0,
    warmPool: options.warmPool, kernelsPerKey: options.kernelsPerKey ?? DEFAULT_KERNELS_PER_KEY,
    launcherEnv: files && ((id, token) => files.env(id, token)), forgetLauncher: files && ((id) => files.forget(id)),
    lifecycle,
  });

  await app.register(async (scope) => {
    // Jupyter's kernel-gateway protocol, not our REST API: its contract is what jupyter_server
    // sends and parses (gateway/README.md, tested with a real Jupyter server), so its routes stay
    // out of /api/openapi.json and the API fuzzer.
    scope.addHook('onRoute', (route) => { route.schema = { ...route.schema, hide: true }; });
    scope.decorateRequest('gatewayKey', undefined);
    scope.decorateRequest('gatewayCaller', null);
    scope.addHook('onRequest', async (request, reply) => {
      // Before anything else: a page of another site is refused as its websockets are (upgrade-guard.ts).
      const crossSite = crossSiteRefusal(request.raw, options.upgrades?.allowedOrigins);
      if (crossSite) return sendGatewayError(reply, 403, 'Forbidden', crossSite);
      const result = authenticate(options.auth, request.raw);
      if (!result.ok) return sendGatewayError(reply, 401, 'Unauthorized', result.message);
      request.gatewayKey = result.key;
      request.gatewayCaller = result.caller;
    });
    scope.setErrorHandler((error: Error & { statusCode?: number; validation?: unknown }, request, reply) => {
      if (error instanceof GatewayError) return sendGatewayError(reply, error.statusCode, error.reason, error.message);
      if (error.validation) return sendGatewayError(reply, 400, 'Bad Request', error.message);
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
      if (status >= 500) request.log.error({ err: error }, 'gateway request failed');
      return sendGatewayError(reply, status, status >= 500 ? 'Internal Server Error' : 'Bad Request', error.message);
    });
    scope.setNotFoundHandler((request, reply) => sendGatewayError(reply, 404, 'Not Found', `No such resource: ${request.url.split('?')[0]}`));
    await scope.register(kernelspecRoutes, { api });
    await scope.register(kernelRoutes, { registry });
    await scope.register(versionRoutes);
  }, { prefix: '/notebooks' });

  const sockets = new SocketSlots(options.websocketsPerKey ?? defaultFairShare.websocketsPerKey, options.auth);
  let detach: (() => void) | undefined;
  app.addHook('onListen', async () => {
    detach = attachChannels(app.server, { registry, auth: options.auth, launcherAuth, log: app.log, sockets, upgrades: options.upgrades, ping: lifecycle });
    await registry.open();
  });
  app.addHook('preClose', async () => {
    detach?.();
    sockets.close();
    await registry.close();
  });
};

export const gatewayPlugin = fp(gateway, { name: 'submission-service-gateway', fastify: '5.x' });
