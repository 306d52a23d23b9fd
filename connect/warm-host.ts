// The warm pool's side of the endpoint (connect/warm-pool.ts's host): servers submitted as the
// service (no key) through what the wiring gives (the cluster itself), waited for like a
// session's, and stopped without a key. A server whose start fails after its submission is
// stopped, so nothing of the pool is left running unseen. A server that answers is then warmed
// up over Spark Connect's own gRPC calls (warm-up.ts) before the pool counts it as ready.
import type { ConnectServerJars } from '../domain/connect-gate.js';
import { listening, type ServerAddress, type ServerPlacement } from './placement.js';
import { warmSubmission } from './server-app.js';
import { waitForServer } from './server-wait.js';
import { warmUpServer } from './warm-up.js';
import { serverAuthorization, type Upstreams } from './relay.js';
import type { WarmPoolHost, WarmServer } from './warm-pool.js';
import type { ConnectApp } from './service-api.js';

export interface WarmOptions {
  /** Servers kept ready per template (undefined: sessions that name none). */
  sizes: ReadonlyMap<string | undefined, number>;
  /** Submits as the service (no key; local mode and the api call the cluster itself). */
  submit: (submission: Record<string, unknown> & { jobName: string; labels: Record<string, string> }) => Promise<ConnectApp>;
  /** An application as the service sees it; undefined when gone. */
  get: (appName: string) => Promise<ConnectApp | undefined>;
  /** A template's Spark version (`engineVersion`), null when it names none; undefined when the template is gone. */
  templateVersion: (name: string) => Promise<string | null | undefined>;
  /**
   * Names the session a handed-out server now runs in its record (the session label, as a cold
   * session's), so that a restarted service knows that id ended (last-run.ts); absent: it stays `warm`.
   */
  handedOut?: (appName: string, sessionId: string) => Promise<unknown>;
  /** The pool's check interval (ms; tests). */
  checkMs?: number;
  /** The warm-up of a server that answers (default: Spark Connect calls, warm-up.ts; tests whose servers are not Spark's give their own). */
  warmUp?: (address: ServerAddress, version: string, signal: AbortSignal, auth: Readonly<Record<string, string>>, upstreams?: Upstreams) => Promise<void>;
}

export interface WarmHostInput {
  warm: WarmOptions;
  placement: ServerPlacement;
  defaultVersion: string;
  serverJars: (version: string) => ConnectServerJars | undefined;
  stop: (appName: string, why: string) => Promise<unknown>;
  stopping: () => boolean;
  probeMs?: number;
  /** The relay's connections to servers: the warm-up's is made there and left open for the session's first call. */
  upstreams?: Upstreams;
}

export function warmPoolHost(input: WarmHostInput): WarmPoolHost {
  const { warm, placement } = input;
  return {
    async versionOf(template) {
      if (template === undefined) return input.defaultVersion;
      const version = await warm.templateVersion(template);
      return version === undefined ? undefined : version ?? input.defaultVersion;
    },
    async start(template, version, submitted): Promise<WarmServer> {
      const port = await placement.port();
      const app = await warm.submit(warmSubmission({ template, version, port, jars: input.serverJars(version), bindAddress: placement.bindAddress }));
      submitted?.(app.appName);
      try {
        const server = await waitForServer({ appName: app.appName, port, placement, get: warm.get, stopping: input.stopping, probeMs: input.probeMs, what: 'a warm pool server' });
        return { appName: app.appName, template, version, port, server };
      } catch (error) {
        await input.stop(app.appName, `it did not start: ${(error as Error).message}`).catch(() => undefined);
        throw error;
      }
    },
    // With the server's own token, as the relay sends it (a 4.x server refuses a call without it).
    warmUp: (server, signal) => (warm.warmUp ?? warmUpServer)(server.server, server.version, signal, serverAuthorization(placement.token(server.appName)), input.upstreams),
    alive: (server) => listening(server.server, 1000),
    stop: async (appName, why = 'the Spark Connect warm pool no longer needed it') => { await input.stop(appName, why); },
  };
}
