// `submission-service local`'s Spark Connect endpoint (connect/): its flags, and the endpoint
// started beside the API, calling it over HTTP as the caller's key like any client would.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Http2SecureServer, ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { type ConnectAuth, createConnectEndpoint } from '../connect/endpoint.js';
import type { EndedSession } from '../connect/last-run.js';
import type { ServerPlacement } from '../connect/placement.js';
import { CONNECT_SESSION_LABEL } from '../connect/server-app.js';
import { type ConnectApp, ServiceApi } from '../connect/service-api.js';
import { ConnectSessions } from '../connect/sessions.js';
import type { SharedActivity } from '../connect/shared-activity.js';
import type { WarmOptions } from '../connect/warm-host.js';
import { newAppName } from '../cluster/app-name.js';
import { connectServerJar } from '../cluster/local/connect-gate.js';
import type { ConnectServerJars } from '../domain/connect-gate.js';
import type { Cluster } from '../cluster/cluster.js';
import { submitApplication } from '../cluster/submit-application.js';
import type { ApplicationConfig } from '../schemas/index.js';
import type { AppRecord } from '../cluster/app-record.js';
import { generateCa, issueServingCert } from '../certs/generate.js';
import { makePrivateDir } from '../lib/atomic-file.js';
import { parseDuration } from '../lib/duration.js';
import { watchKeyPair } from './connect-tls-reload.js';

export const connectFlags = {
  // The Spark Connect endpoint's port (0: any free one, printed at start; off: no endpoint).
  // Absent: 15002, Spark Connect's own, or none (said) while something else holds it.
  'connect-port': { type: 'string' },
  // Stop a Connect session's application after this long without a call (0: never).
  'connect-idle-timeout': { type: 'string', default: '1h' },
  // TLS (the Python client needs it for any host name but localhost, and pyspark 3.5 for a token):
  // off, or on with --connect-tls-cert/--connect-tls-key, else a certificate the service makes.
  'connect-tls': { type: 'string', default: 'off' },
  'connect-tls-cert': { type: 'string' },
  'connect-tls-key': { type: 'string' },
  // Connect servers kept started per template (TEMPLATE=N, repeatable; `default`: sessions naming none).
  'connect-warm-pool': { type: 'string', multiple: true },
} as const;

export const DEFAULT_CONNECT_PORT = 15002;

export interface ConnectSettings {
  port: number;
  /** The port was asked for: a busy one stops the start (else the endpoint is left out, said in the log). */
  explicit: boolean;
  idleMs: number;
  /** PEM files given, or `made`: a CA and certificate the service makes once in the data dir. */
  tls?: { certFile: string; keyFile: string } | 'made';
  /** Warm pool sizes per template (undefined: sessions naming none); empty: no pool. */
  warmPool: Map<string | undefined, number>;
}

/** `--connect-warm-pool TEMPLATE=N` (repeatable; `default`: sessions that name no template) → sizes; a later value wins. */
export function parseConnectWarmPool(values: string[] | undefined): Map<string | undefined, number> {
  const sizes = new Map<string | undefined, number>();
  for (const value of values ?? []) {
    const match = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)=(\d{1,2})$/.exec(value);
    if (!match) throw new Error(`--connect-warm-pool takes TEMPLATE=N (a template name, or default for sessions that name none, and a number of servers, 0-99), not ${JSON.stringify(value)}`);
    sizes.set(match[1] === 'default' ? undefined : match[1], Number(match[3]));
  }
  return sizes;
}

type FlagValues = { [K in keyof typeof connectFlags]?: K extends 'connect-warm-pool' ? string[] : string };

export function parseConnectFlags(values: FlagValues): ConnectSettings | undefined {
  const port = values['connect-port'] ?? String(DEFAULT_CONNECT_PORT);
  if (port === 'off') return undefined;
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) throw new Error(`--connect-port takes a port (0: any free one) or off, not ${JSON.stringify(port)}`);
  const idleMs = parseDuration(values['connect-idle-timeout'] ?? '1h', 's');
  if (idleMs === undefined) throw new Error(`--connect-idle-timeout takes a duration such as 30m or 3600 (seconds; 0: never), not ${JSON.stringify(values['connect-idle-timeout'])}`);
  const [certFile, keyFile, mode] = [values['connect-tls-cert'], values['connect-tls-key'], values['connect-tls'] ?? 'off'];
  if (mode !== 'on' && mode !== 'off') throw new Error('--connect-tls takes on or off');
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error('--connect-tls-cert and --connect-tls-key go together');
  const tls = mode === 'off' ? undefined : certFile && keyFile ? { certFile, keyFile } : 'made';
  return { port: Number(port), explicit: values['connect-port'] !== undefined, idleMs, tls, warmPool: parseConnectWarmPool(values['connect-warm-pool']) };
}

/**
 * The endpoint's certificate: the files given, or a CA and a certificate for this machine's
 * names made once in DIR/connect-tls/ (0700; kept across restarts, so clients trust it once).
 * `trust`: the file clients trust (GRPC_DEFAULT_SSL_ROOTS_FILE_PATH).
 */
async function endpointCertificate(tls: NonNullable<ConnectSettings['tls']>, dataDir: string): Promise<EndpointCertificate> {
  if (tls !== 'made') return { cert: readFileSync(tls.certFile, 'utf8'), key: readFileSync(tls.keyFile, 'utf8'), trust: tls.certFile };
  const dir = join(dataDir, 'connect-tls');
  const [caFile, certFile, keyFile] = ['ca.pem', 'cert.pem', 'key.pem'].map((name) => join(dir, name));
  if (!existsSync(keyFile)) {
    makePrivateDir(dir);
    const ca = await generateCa({ commonName: 'submission-service Spark Connect (local)', validityDays: 3650 });
    const serving = await issueServingCert({ ca, dnsNames: ['localhost', hostname()], ipAddresses: ['127.0.0.1', '::1'], validityDays: 3649 });
    writeFileSync(caFile, ca.cert, { mode: 0o644 });
    writeFileSync(certFile, serving.cert, { mode: 0o644 });
    writeFileSync(keyFile, serving.key, { mode: 0o600 });
  }
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), trust: caFile };
}

export interface ConnectWiring {
  dataDir: string;
  settings: ConnectSettings;
  auth: ConnectAuth;
  log: FastifyBaseLogger;
  /** The API's address (this server's own), known once it listens. */
  apiUrl: () => string;
  defaultVersion: string;
  stopApp: (appName: string, why: string) => Promise<unknown>;
  /** Sessions of the last run, refused as ended (local mode: connect/last-run.ts). */
  ended?: EndedSession[];
  /** Where sessions' servers run (default: loopback ports, local mode). */
  placement?: ServerPlacement;
  /** A 3.x Connect server's jars by version (default: the server's jar setup fetched onto this machine; local mode adds the gate at the driver's start). */
  serverJars?: (version: string) => ConnectServerJars | undefined;
  /** A certificate already at hand (Kubernetes mode: from its Secret), instead of settings.tls's. */
  certificate?: EndpointCertificate;
  /** The host name the printed address names (default: localhost on loopback, else `host`). */
  announceHost?: string;
  /** The API's proof (lib/gateway-proof.ts): a session's labels and the warm pool's claims need it. */
  proof: string | undefined;
  /** The warm pool's way to the cluster (submits with no key). */
  warm?: { via: Omit<WarmOptions, 'sizes'> };
  /** Kubernetes mode: sessions' last activity shared by the replicas (connect/shared-activity.ts). */
  activity?: SharedActivity;
  /** Every application of a session id, whoever's (connect/sessions.ts SessionsOptions.sessionClaims). */
  sessionClaims: (sessionId: string) => Promise<ConnectApp[]>;
  /** Every Connect session's application not ended, whoever's: the orphan sweep's (connect/orphan-sweep.ts). */
  connectServers?: () => Promise<ConnectApp[]>;
}

/**
 * Every application labelled with a session id, read from the cluster with the service's rights
 * (connect/sessions.ts: whose session it is, decided the same on every replica).
 */
export function sessionClaims(cluster: Pick<Cluster, 'list'>): (sessionId: string) => Promise<AppRecord[]> {
  return async (sessionId) => (await cluster.list({ labels: { [CONNECT_SESSION_LABEL]: sessionId }, limit: 20 })).items;
}

/** Every Connect session's application still queued or running, read from the cluster with the service's rights, page by page. */
export function connectServers(cluster: Pick<Cluster, 'list'>): () => Promise<AppRecord[]> {
  return async () => {
    const found: AppRecord[] = [];
    for (const state of ['PENDING', 'RUNNING'] as const) {
      let cursor: string | undefined;
      do {
        const page = await cluster.list({ state, limit: 500, cursor });
        found.push(...page.items.filter((record) => record.labels?.[CONNECT_SESSION_LABEL] !== undefined));
        cursor = page.next ?? undefined;
      } while (cursor);
    }
    return found;
  };
}

/** The warm pool's servers as the service's own: submitted to the cluster itself (no key), read and looked up there. */
export function warmVia(cluster: Pick<Cluster, 'createDriver' | 'get' | 'templates'>): Omit<WarmOptions, 'sizes'> {
  return {
    submit: async (submission) => {
      const { jobName, configTemplateName, configOverrides, labels } = submission as { jobName: string; configTemplateName?: string; configOverrides: ApplicationConfig; labels: Record<string, string> };
      const result = await submitApplication(cluster, { appName: newAppName(jobName), jobName, configTemplateName, configOverrides, labels }, { dryRun: false });
      if (!result.ok) throw new Error(`the warm pool's server was refused (HTTP ${result.status}): ${result.body.message}`);
      return result.record;
    },
    get: (appName) => cluster.get(appName),
    templateVersion: async (name) => {
      const template = await cluster.templates.get(name);
      return template === undefined ? undefined : template.config.engineVersion ?? null;
    },
  };
}

/** The pool's options, or undefined (off, said in the log when it cannot claim for keys). */
function warmOptions(wiring: ConnectWiring): WarmOptions | undefined {
  const sizes = wiring.settings.warmPool;
  if (!wiring.warm || ![...sizes.values()].some((n) => n > 0)) return undefined;
  if (wiring.auth.enabled && !wiring.proof) {
    wiring.log.warn('no Spark Connect warm pool: handing a server to a key needs the gateway secret (gateway.secret / SUBMISSION_SERVICE_GATEWAY_SECRET)');
    return undefined;
  }
  return { sizes, ...wiring.warm.via };
}

/** Local mode's 3.x Connect server: the jar setup fetched onto this machine (the gate is added at the driver's start). */
const fetchedServerJar = (version: string): ConnectServerJars | undefined => {
  const server = connectServerJar(version);
  return server ? { server } : undefined;
};

/** PEM certificate and key the endpoint serves, and what clients trust (said at start). */
export interface EndpointCertificate { cert: string; key: string; trust: string }

export interface ConnectEndpoint {
  url: string;
  /** Stops every session, then the endpoint (no Connect server is left running). */
  close: () => Promise<void>;
  /** Serves a renewed certificate to new connections (TLS only). */
  setCertificate: (pair: { cert: string; key: string }) => void;
}

/**
 * Starts the endpoint on `host` (after the API listens: sessions are submitted through it as the
 * caller's key, and stopped by `stopApp` without one when idle or at shutdown) and prints its
 * address; undefined when the default port is taken (another service on this machine holds it).
 */
export async function startConnectEndpoint(host: string, wiring: ConnectWiring): Promise<ConnectEndpoint | undefined> {
  const sessions = new ConnectSessions({
    api: new ServiceApi(wiring.apiUrl, wiring.proof), sessionClaims: wiring.sessionClaims, log: wiring.log, defaultVersion: wiring.defaultVersion,
    serverJars: wiring.serverJars ?? fetchedServerJar, idleMs: wiring.settings.idleMs, stopApp: wiring.stopApp, placement: wiring.placement,
    warm: warmOptions(wiring), ended: wiring.ended, activity: wiring.activity, connectServers: wiring.connectServers,
  });
  const tls = wiring.certificate ?? (wiring.settings.tls && await endpointCertificate(wiring.settings.tls, wiring.dataDir));
  const server = createConnectEndpoint({ auth: wiring.auth, sessions, log: wiring.log, tls });
  const clients = new Set<ServerHttp2Session>();
  server.on('session', (client: ServerHttp2Session) => { clients.add(client); client.once('close', () => clients.delete(client)); });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(wiring.settings.port, host, () => { server.off('error', reject); resolve(); });
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || wiring.settings.explicit) throw error;
    wiring.log.warn(`no Spark Connect endpoint: port ${wiring.settings.port} is in use (--connect-port 0 picks a free one)`);
    return undefined;
  }
  const { port } = server.address() as AddressInfo;
  // The Python client sends a token in plaintext only to the name localhost.
  const name = wiring.announceHost ?? (host === '127.0.0.1' || host === '::1' || host === 'localhost' ? 'localhost' : host);
  const url = `sc://${name.includes(':') ? `[${name}]` : name}:${port}`;
  const trust = tls ? `  (TLS: clients trust it with GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=${tls.trust})` : '';
  process.stdout.write(`Spark Connect at ${url}/${wiring.auth.enabled ? ';token=YOUR_KEY' : ''}${trust}\n`);
  const setCertificate = (pair: { cert: string; key: string }) => { if (tls) (server as Http2SecureServer).setSecureContext(pair); };
  // Files of the operator's (e.g. a Secret cert-manager rotates): followed while the endpoint runs.
  const files = !wiring.certificate && typeof wiring.settings.tls === 'object' ? wiring.settings.tls : undefined;
  const reload = tls && files && watchKeyPair({
    files, served: tls, apply: setCertificate, log: { info: (message) => wiring.log.info(message), warn: (message) => wiring.log.warn(message) },
  });
  const close = async () => {
    reload?.close();
    await sessions.close();
    const closed = new Promise<void>((resolve) => { server.close(() => resolve()); });
    for (const client of clients) client.destroy();
    await closed;
  };
  return { url, close, setCertificate };
}
