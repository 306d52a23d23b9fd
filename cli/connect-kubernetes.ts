// `submission-service api`'s Spark Connect endpoint (Kubernetes mode): the same endpoint as local
// mode's (connect/, cli/connect-wiring.ts), its sessions' servers in driver pods reached on their
// IPs, its certificate kept in a Secret shared by every replica (as the webhook keeps its own) or
// given as files (an operator's certificate, e.g. cert-manager's, mounted from a TLS Secret).
import type { FastifyBaseLogger } from 'fastify';
import { ensureSharedCertificates, secretCertificateStore } from '../certs/secret-store.js';
import { serviceDnsNames } from '../certs/generate.js';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import type { KubernetesCluster } from '../cluster/kubernetes/kubernetes-cluster.js';
import type { ConnectAuth } from '../connect/endpoint.js';
import { podPlacement } from '../connect/placement.js';
import { CONNECT_SESSION_LABEL } from '../connect/server-app.js';
import { activityOf, CONNECT_ACTIVITY_LABEL } from '../connect/shared-activity.js';
import { connectTokenKey, DRIVER_PORTS, imageConnectJars } from '../domain/index.js';
import { parseSecretRef } from './config.js';
import { connectFlags, connectServers, type ConnectEndpoint, type ConnectSettings, type EndpointCertificate, parseConnectFlags, sessionClaims, startConnectEndpoint, warmVia } from './connect-wiring.js';

export const kubernetesConnectFlags = {
  ...connectFlags,
  // NAMESPACE/NAME of the Secret that keeps the endpoint's CA and certificate (issued by the first
  // replica, adopted by the others, renewed before it expires); clients trust its ca.crt.
  'connect-cert-secret': { type: 'string' },
  // The Service the endpoint is reached through (NAMESPACE/NAME): its cluster DNS names go into
  // the issued certificate.
  'connect-service': { type: 'string' },
  // More names clients use (a load balancer's, an ingress's): also in the issued certificate.
  'connect-dns-name': { type: 'string', multiple: true },
} as const;

type Values = { [K in keyof typeof kubernetesConnectFlags]?: K extends 'connect-dns-name' | 'connect-warm-pool' ? string[] : string };

export interface KubernetesConnectSettings {
  endpoint: ConnectSettings;
  /** Issue (or adopt) the certificate in this Secret for these names. */
  certSecret?: { namespace: string; name: string; dnsNames: string[] };
  /** The name the endpoint's address is printed with: the first --connect-dns-name, else the Service's. */
  announceHost?: string;
}

/** The flags as settings; undefined: no endpoint. TLS is on whenever a certificate Secret is named. */
export function parseKubernetesConnectFlags(values: Values): KubernetesConnectSettings | undefined {
  const certSecret = values['connect-cert-secret'];
  if (certSecret && values['connect-tls-cert']) throw new Error('--connect-cert-secret and --connect-tls-cert are alternatives: one certificate');
  const endpoint = parseConnectFlags({ ...values, 'connect-tls': certSecret ? 'on' : values['connect-tls'] });
  if (!endpoint) return undefined;
  if (endpoint.tls === 'made' && !certSecret) throw new Error('--connect-tls on needs --connect-cert-secret NAMESPACE/NAME (a certificate kept for every replica) or --connect-tls-cert/--connect-tls-key');
  if (!certSecret) return { endpoint };
  const service = values['connect-service'] ? parseSecretRef(values['connect-service'], '--connect-service') : undefined;
  const extra = values['connect-dns-name'] ?? [];
  const dnsNames = [...extra, ...(service ? serviceDnsNames(service.name, service.namespace) : []), 'localhost'];
  const announceHost = extra[0] ?? (service ? `${service.name}.${service.namespace}.svc` : undefined);
  return { endpoint, announceHost, certSecret: { ...parseSecretRef(certSecret, '--connect-cert-secret'), dnsNames: [...new Set(dnsNames)] } };
}

/**
 * The key of Connect servers' own tokens (domain/connect-server-token.ts), derived from
 * SUBMISSION_SERVICE_GATEWAY_SECRET: the chart's gateway.secret, which every api replica has and
 * no user code or key reads; undefined without it (servers then get no token).
 */
export const gatewayConnectTokenKey = (secret = process.env.SUBMISSION_SERVICE_GATEWAY_SECRET): Buffer | undefined => (secret ? connectTokenKey(secret) : undefined);

/** How often the Secret's certificate is checked for renewal (or for a pair another replica wrote). */
const CERTIFICATE_CHECK_MS = 6 * 60 * 60_000;

async function secretCertificate(clients: KubeClients, ref: NonNullable<KubernetesConnectSettings['certSecret']>): Promise<EndpointCertificate> {
  const store = secretCertificateStore({ core: clients.core, namespace: ref.namespace, name: ref.name });
  const { certs } = await ensureSharedCertificates(store, { dnsNames: ref.dnsNames });
  return { cert: certs.cert, key: certs.key, trust: `ca.crt of Secret ${ref.namespace}/${ref.name}` };
}

export interface KubernetesConnectWiring {
  settings: KubernetesConnectSettings;
  clients: KubeClients;
  cluster: KubernetesCluster;
  auth: ConnectAuth;
  log: FastifyBaseLogger;
  apiUrl: () => string;
  defaultVersion: string;
  dataDir: string;
  /** The port sessions' servers listen on in their pods (default Spark Connect's 15002; tests use another). */
  serverPort?: number;
  /** The API's proof (a session's labels and a warm pool's claims need it). */
  proof: string;
}

/** Starts the endpoint on `host`, once the API listens (sessions are submitted through it as the caller's key). */
export async function startKubernetesConnect(host: string, wiring: KubernetesConnectWiring): Promise<ConnectEndpoint | undefined> {
  const { settings, cluster } = wiring;
  const ref = settings.certSecret;
  const gated = cluster.connectServerToken('any') !== undefined;
  if (!gated) {
    wiring.log.warn('Spark Connect: sessions\' servers get no token of their own (no gateway secret: gateway.secret / SUBMISSION_SERVICE_GATEWAY_SECRET); only NetworkPolicies keep other pods from calling them');
  }
  const certificate = ref ? await secretCertificate(wiring.clients, ref) : undefined;
  const endpoint = await startConnectEndpoint(host, {
    dataDir: wiring.dataDir, settings: settings.endpoint, auth: wiring.auth, log: wiring.log, apiUrl: wiring.apiUrl,
    defaultVersion: wiring.defaultVersion, stopApp: (appName, why) => cluster.stop(appName, why),
    // Each driver pod has its own IP: every session's server listens on Connect's own port, and
    // asks every call for the token its pod was given (the relay sends it).
    placement: podPlacement(wiring.serverPort ?? DRIVER_PORTS.connect, (appName) => cluster.driverPodIp(appName), (appName) => cluster.connectServerToken(appName)),
    // A 3.x driver's Connect server and the service's gate on it are in its runtime image
    // (images/build.sh): nothing resolved at its start. The gate only with a token to ask for.
    serverJars: () => imageConnectJars(gated),
    certificate, announceHost: settings.announceHost,
    // The warm pool (per replica): servers submitted as the service, claimed through the API, then
    // labelled with their session, which another replica finds them by (connect/sessions.ts).
    warm: { via: { ...warmVia(cluster), handedOut: (appName, sessionId) => cluster.setLabels(appName, { [CONNECT_SESSION_LABEL]: sessionId }) } },
    proof: wiring.proof, sessionClaims: sessionClaims(cluster),
    // A replica killed without a drain leaves its sessions running: every replica stops those idle past the timeout (connect/orphan-sweep.ts).
    connectServers: connectServers(cluster),
    // A session may be used through several replicas: each culls by the activity they all write on its application (read from the cache).
    activity: {
      mark: (appName, at) => cluster.setLabels(appName, { [CONNECT_ACTIVITY_LABEL]: String(at) }),
      read: async (appName) => activityOf((await cluster.get(appName))?.labels),
    },
  });
  if (!endpoint || !ref) return endpoint;
  let served = certificate!.cert;
  const timer = setInterval(() => {
    secretCertificate(wiring.clients, ref).then((renewed) => {
      if (renewed.cert === served) return;
      endpoint.setCertificate(renewed);
      served = renewed.cert;
      wiring.log.info('Spark Connect endpoint: serving a renewed certificate');
    }, (error: Error) => wiring.log.warn({ err: error }, 'Spark Connect endpoint: could not check its certificate; will try again'));
  }, CERTIFICATE_CHECK_MS);
  timer.unref();
  return { ...endpoint, close: async () => { clearInterval(timer); await endpoint.close(); } };
}
