// `submission-service local`'s Spark Connect endpoint (connect/): its flags, and the endpoint
// started beside the API, calling it over HTTP as the caller's key like any client would.
import { existsSync, readFileSync } from 'node:fs';
import type { ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { type ConnectAuth, createConnectEndpoint } from '../connect/endpoint.js';
import { ServiceApi } from '../connect/service-api.js';
import { ConnectSessions } from '../connect/sessions.js';
import { parseDuration } from '../lib/duration.js';

export const connectFlags = {
  // The Spark Connect endpoint's port (0: any free one, printed at start; off: no endpoint).
  // Absent: 15002, Spark Connect's own, or none (said) while something else holds it.
  'connect-port': { type: 'string' },
  // Stop a Connect session's application after this long without a call (0: never).
  'connect-idle-timeout': { type: 'string', default: '1h' },
  // PEM files: serve TLS (clients need it for any host name but localhost).
  'connect-tls-cert': { type: 'string' },
  'connect-tls-key': { type: 'string' },
} as const;

export const DEFAULT_CONNECT_PORT = 15002;

export interface ConnectSettings {
  port: number;
  /** The port was asked for: a busy one stops the start (else the endpoint is left out, said in the log). */
  explicit: boolean;
  idleMs: number;
  tls?: { cert: string; key: string; certFile: string };
}

export function parseConnectFlags(values: { [K in keyof typeof connectFlags]?: string }): ConnectSettings | undefined {
  const port = values['connect-port'] ?? String(DEFAULT_CONNECT_PORT);
  if (port === 'off') return undefined;
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) throw new Error(`--connect-port takes a port (0: any free one) or off, not ${JSON.stringify(port)}`);
  const idleMs = parseDuration(values['connect-idle-timeout'] ?? '1h', 's');
  if (idleMs === undefined) throw new Error(`--connect-idle-timeout takes a duration such as 30m or 3600 (seconds; 0: never), not ${JSON.stringify(values['connect-idle-timeout'])}`);
  const [certFile, keyFile] = [values['connect-tls-cert'], values['connect-tls-key']];
  if (Boolean(certFile) !== Boolean(keyFile)) throw new Error('--connect-tls-cert and --connect-tls-key go together');
  const tls = certFile && keyFile ? { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile } : undefined;
  return { port: Number(port), explicit: values['connect-port'] !== undefined, idleMs, tls };
}

/**
 * Spark 3.5's Connect server jar fetched ahead by scripts/setup.sh (SUBMISSION_SERVICE_CONNECT_JARS:
 * a directory of `spark-connect_2.12-VERSION.jar`); undefined: the driver resolves the artifact.
 */
export function connectServerJar(version: string): string | undefined {
  const dir = process.env.SUBMISSION_SERVICE_CONNECT_JARS;
  const jar = dir ? join(dir, `spark-connect_2.12-${version}.jar`) : undefined;
  return jar && existsSync(jar) ? jar : undefined;
}

export interface ConnectWiring {
  settings: ConnectSettings;
  auth: ConnectAuth;
  log: FastifyBaseLogger;
  /** The API's address (this server's own), known once it listens. */
  apiUrl: () => string;
  defaultVersion: string;
  stopApp: (appName: string) => Promise<unknown>;
}

/**
 * Starts the endpoint on `host`; resolves with its address and a close that stops every session,
 * or undefined when the default port is taken (another service on this machine holds it).
 */
export async function startConnectEndpoint(host: string, wiring: ConnectWiring): Promise<{ url: string; close: () => Promise<void> } | undefined> {
  const sessions = new ConnectSessions({
    api: new ServiceApi(wiring.apiUrl), log: wiring.log, defaultVersion: wiring.defaultVersion,
    serverJar: connectServerJar, idleMs: wiring.settings.idleMs, stopApp: wiring.stopApp,
  });
  const server = createConnectEndpoint({ auth: wiring.auth, sessions, log: wiring.log, tls: wiring.settings.tls });
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
  const name = host === '127.0.0.1' || host === '::1' || host === 'localhost' ? 'localhost' : host;
  return {
    url: `sc://${name.includes(':') ? `[${name}]` : name}:${port}`,
    close: async () => {
      await sessions.close();
      const closed = new Promise<void>((resolve) => { server.close(() => resolve()); });
      for (const client of clients) client.destroy();
      await closed;
    },
  };
}
