// The webhook process: its admission cache (templates watched, executors' drivers read on a
// miss), certificates (issued, rotated, CA published in the MutatingWebhookConfiguration), and
// the HTTPS server running the pure admission.
//
// Certificates live in --cert-dir (one replica), or in a Secret shared by all replicas
// (`certSecret`). With the Secret, it is the source of truth: every check ensures it holds
// a valid CA and serving pair (issuing one, or adopting what another replica wrote:
// certs/secret-store.ts), publishes its caBundle, and only then copies the pair into
// --cert-dir, which the server reloads without a restart. A pair signed by a CA the
// replica did not serve under before is copied in only after the caBundle with that CA has
// been published and has had `caBundleSettleMs` to reach the apiservers, so no admission
// meets a certificate the apiserver does not trust yet.
import { type Logger, pino } from 'pino';
import { type MetricsServer, startMetricsServer } from '../lib/metrics-server.js';
import { oneAfterAnother } from '../lib/one-after-another.js';
import { retry } from '../lib/retry.js';
import { AdmissionregistrationV1Api, type V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { AdmissionCache } from '../cluster/kubernetes/admission-cache.js';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import { statusCode } from '../cluster/kubernetes/errors.js';
import { newAppName } from '../cluster/app-name.js';
import { caBundle as caBundleOf, ensureCertificates, type EnsureResult, type RotationPolicy } from '../certs/rotation.js';
import { ensureSharedCertificates, secretCertificateStore } from '../certs/secret-store.js';
import { fileCertificateStore, type StoredCertificates } from '../certs/store.js';
import { admitPod, type RulesInput, rulesNow } from '../domain/index.js';
import { mutatingWebhookConfiguration } from '../webhook/server/registration.js';
import { startWebhookServer, type WebhookServer, type WebhookServerOptions } from '../webhook/server/server.js';
import type { Drain } from '../lib/drain.js';

export interface WebhookServiceOptions {
  clients: KubeClients;
  /** The admission rules; a watched source (cli/watched-rules.ts) follows the node-pool file. */
  rules: RulesInput;
  certDir: string;
  port: number;
  host: string;
  dnsNames: string[];
  ipAddresses?: string[];
  /** Keep this MutatingWebhookConfiguration registered with our CA. */
  registration?: { name: string; url?: string; service?: { namespace: string; name: string; port?: number }; apiUser?: string };
  /**
   * Keep the CA and serving certificate in this Secret, shared with the other replicas;
   * certDir then holds this replica's copy of it. Needs get and update on the Secret
   * (create too when it does not exist yet).
   */
  certSecret?: { namespace: string; name: string };
  /** How often the certificate is checked for renewal (and, with certSecret, for a pair another replica wrote). */
  rotationCheckMs?: number;
  /** With certSecret: wait this long after publishing a new CA before serving a certificate it signed. Default 5 s. */
  caBundleSettleMs?: number;
  /** Validity of serving certificates and of the CA (certs/rotation.ts defaults: 365 and 3650 days). */
  validityDays?: number;
  caValidityDays?: number;
  onReview?: WebhookServerOptions['onReview'];
  /** Where problems of the background work go (a failed certificate check, a reload error). Default: the logger, as warnings. */
  log?: (message: string) => void;
  /** The process's structured log: every admission (uid, app, outcome), certificate events. Default: none. */
  logger?: Logger;
  /** Serve GET /metrics over plain HTTP on this port (0: any free port); absent: no metrics listener. */
  metricsPort?: number;
  /** Tracks requests, so that a shutdown can drain them first (lib/drain.ts). */
  drain?: Drain;
}

/**
 * Keeps our CA in the MutatingWebhookConfiguration. One that exists (the Helm chart's) only
 * gets its caBundle patched, and only when it differs, so its failurePolicy, timeouts and
 * labels stay as deployed; a missing one (the test bed) is created whole.
 */
async function register(clients: KubeClients, body: V1MutatingWebhookConfiguration): Promise<void> {
  const api = clients.kc.makeApiClient(AdmissionregistrationV1Api);
  const name = body.metadata!.name!;
  const caBundle = body.webhooks?.[0]?.clientConfig.caBundle;
  const patchOrCreate = async () => {
    try {
      const current = await api.readMutatingWebhookConfiguration({ name });
      const patch = (current.webhooks ?? []).flatMap((w, i) => (w.clientConfig.caBundle === caBundle ? []
        : [{ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }]));
      if (patch.length > 0) await api.patchMutatingWebhookConfiguration({ name, body: patch });
      return;
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
    }
    await api.createMutatingWebhookConfiguration({ body });
  };
  // 409 on create: another replica created it a moment ago; patch that one instead.
  await retry(patchOrCreate, { attempts: 3, retryOn: (error) => statusCode(error) === 409, delayMs: () => 0 });
}

const sameCerts = (a: StoredCertificates | undefined, b: StoredCertificates) =>
  a !== undefined && a.caCert === b.caCert && a.caKey === b.caKey && a.cert === b.cert && a.key === b.key;

const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

export interface CertificateCheck {
  /** Why this replica issued a new pair ('none' when it kept or adopted the stored one). */
  reason: EnsureResult['reason'];
  /** The local copy (the served pair) changed: a rotation by this or by another replica. */
  installed: boolean;
  caBundle: string;
}

/**
 * One replica's certificate checks, one at a time (the timer and an explicit call never
 * interleave their writes). File mode: the files are the store, and a renewed CA is published
 * before its certificate is written. Secret mode: the Secret is the store shared by replicas; its
 * CA is published, then it is copied to the files the server reads.
 */
function certificateChecks(options: WebhookServiceOptions, publish: (caBundle: string) => Promise<void>, server: () => WebhookServer | undefined) {
  const files = fileCertificateStore(options.certDir);
  const shared = options.certSecret ? secretCertificateStore({ core: options.clients.core, ...options.certSecret }) : undefined;
  const policy: RotationPolicy = {
    dnsNames: options.dnsNames, ipAddresses: options.ipAddresses, validityDays: options.validityDays, caValidityDays: options.caValidityDays,
  };
  let currentBundle = '';

  const checkFiles = async (overrides: Pick<RotationPolicy, 'now'>): Promise<CertificateCheck> => {
    const result = await ensureCertificates(files, { ...policy, ...overrides, publishCaBundle: publish });
    if (result.reason !== 'none') await server()?.reloadCertificates();
    currentBundle = caBundleOf(result.certs);
    return { reason: result.reason, installed: result.reason !== 'none', caBundle: currentBundle };
  };

  const checkSecret = async (store: NonNullable<typeof shared>, overrides: Pick<RotationPolicy, 'now'>): Promise<CertificateCheck> => {
    const first = await ensureSharedCertificates(store, { ...policy, ...overrides });
    let certs = first.certs;
    // Publish what the Secret holds, then look again: a replica that wrote in between has
    // published before or will publish after us (it publishes after its write), so once the
    // Secret is unchanged across our publish, the published caBundle is that of the Secret.
    for (let attempt = 1; ; attempt++) {
      currentBundle = caBundleOf(certs); // with the real clock, whatever `now` the check used
      await publish(currentBundle);
      const again = await store.read();
      if (sameCerts(again, certs)) break;
      if (attempt >= 5) throw new Error(`Secret ${store.namespace}/${store.name} keeps changing; will check again`);
      certs = (await ensureSharedCertificates(store, policy)).certs;
    }
    const local = await files.read();
    if (sameCerts(local, certs)) return { reason: first.reason, installed: false, caBundle: currentBundle };
    // A new CA: let the apiservers see the caBundle with it before serving what it signed.
    if (local && server() && local.caCert !== certs.caCert) await sleep(options.caBundleSettleMs ?? 5_000);
    await files.write(certs);
    await server()?.reloadCertificates();
    return { reason: first.reason, installed: true, caBundle: currentBundle };
  };

  const check = oneAfterAnother((overrides: Pick<RotationPolicy, 'now'> = {}) => (shared ? checkSecret(shared, overrides) : checkFiles(overrides)));
  return {
    files,
    /** Secret mode: the CA was published by the check itself. */
    secretMode: shared !== undefined,
    get caBundle() { return currentBundle; },
    /** Resolves when the check under way (if any) has ended. */
    idle: check.idle,
    check,
  };
}

/** The admission of one pod, as the API makes it, from what the webhook's cache holds. */
function admitFrom(cache: AdmissionCache, rules: WebhookServiceOptions['rules']) {
  return (pod: Parameters<typeof admitPod>[0], review: { dryRun?: boolean }) => admitPod(pod, {
    rules: rulesNow(rules), dryRun: review.dryRun,
    templates: (name) => cache.templates.get(name),
    applications: (name, uid) => cache.driverConfig(name, uid), driverApplication: (name, uid) => cache.driverApplication(name, uid), jobRuns: (jobName, submittedBy) => cache.jobs.runs(jobName, submittedBy),
    newAppName,
  });
}

export async function startWebhookService(options: WebhookServiceOptions) {
  const { rules } = options;
  const logger = options.logger ?? pino({ enabled: false });
  // Without a logger (tests embedding the service), admissions are not logged line by line;
  // problems of the background work still reach stderr.
  const log = options.log ?? (options.logger ? (message: string) => logger.warn(message) : (message: string) => void process.stderr.write(`webhook: ${message}\n`));
  const cache = new AdmissionCache(options.clients, rulesNow(rules).namespace);
  await cache.start();
  const publish = async (caBundle: string) => {
    if (!options.registration) return;
    const { name, url, service, apiUser } = options.registration;
    await register(options.clients, mutatingWebhookConfiguration({ name, url, service, caBundle, namespaces: [rulesNow(rules).namespace], apiUser }) as V1MutatingWebhookConfiguration);
  };
  let server: WebhookServer | undefined;
  const certificates = certificateChecks(options, publish, () => server);
  const { files } = certificates;
  const check = (overrides: Pick<RotationPolicy, 'now'> = {}) => certificates.check(overrides);

  let metrics: MetricsServer | undefined;
  try {
    await check();
    // Plain HTTP beside the HTTPS port: Prometheus scrapes it without our private CA.
    metrics = options.metricsPort === undefined ? undefined
      : await startMetricsServer({ port: options.metricsPort, host: options.host, onError: (error) => logger.error({ err: error }, 'metrics scrape failed') });
    server = await startWebhookServer({
      logger,
      port: options.port,
      host: options.host,
      certFile: files.paths.cert,
      keyFile: files.paths.key,
      onReview: options.onReview,
      onEvent: (event) => {
        if (event.type === 'cert-reloaded') logger.info(event.message);
        else log(`${event.type}: ${event.message}`);
      },
      ready: () => cache.ready,
      drain: options.drain,
      prepare: (review) => cache.prepare(review),
      admit: admitFrom(cache, rules),
    });
    // File mode publishes once serving (a missing configuration, created whole, sends pods at
    // once); Secret mode has published in its check, before installing the files.
    if (!certificates.secretMode) await publish(certificates.caBundle);
  } catch (error) {
    // A start that fails half-way (no certificate, no port, no registration) leaves nothing
    // behind: the caller may try again in the same process (tests, an embedding service).
    await server?.close().catch(() => undefined);
    await metrics?.close().catch(() => undefined);
    await cache.stop().catch(() => undefined);
    throw error;
  }
  // Renewal writes new files; the server reloads them without a restart.
  // A failed check is retried at the next tick; it is said, not swallowed.
  const timer = setInterval(() => void check().catch((error: Error) => log(`certificate check failed: ${error.message}`)), options.rotationCheckMs ?? 3_600_000);
  timer.unref();
  return {
    url: server.url,
    /** The plain-HTTP /metrics URL, with metricsPort. */
    metricsUrl: metrics?.url,
    /** base64 PEM of the CAs this replica last published. */
    get caBundle() { return certificates.caBundle; },
    cache,
    /**
     * Runs a certificate check now (what the timer does); `now` pretends a later time for
     * the renewal decision, as certs/rotation.ts allows. Serialised with the timer's checks.
     */
    checkCertificates: check,
    async close() {
      clearInterval(timer);
      // Let a check in progress finish its writes, but not hang on an unreachable apiserver.
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([certificates.idle(), new Promise<void>((ok) => { waited = setTimeout(ok, 10_000); })]);
      clearTimeout(waited);
      await server!.close();
      await metrics?.close();
      await cache.stop();
    },
  };
}
