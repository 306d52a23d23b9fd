// The controller's part of "object storage per application" (domain/event-log-access.ts), run by
// the leader: when an Application is first seen it gets a key that reaches only its own folder,
// in a Secret it owns (the garbage collector removes it with it), which admission named in its
// driver's env; once the run has ended the key is revoked first (the driver can write nothing
// more), then its event log is moved into the History Server's directory and the folder and the
// its folder deleted. One application at a time: the store's policy is read, changed and
// written back.
import { isTerminal } from '../cluster.js';
import { appEventLogPrefix, eventLogSecretName, LABEL_APP, S3_CREDENTIAL_VARIABLES } from '../../domain/index.js';
import { collectS3EventLogs } from '../history/collect-s3-event-log.js';
import type { EventLogKeys } from '../history/event-log-keys.js';
import type { ObjectStore } from '../history/object-store.js';
import type { AppCache } from './app-cache.js';
import { GROUP, type KubeClients, VERSION } from './client.js';
import type { Log as LogFn } from './informers.js';

export interface EventLogAccessOptions {
  clients: KubeClients;
  namespace: string;
  cache: AppCache;
  keys: EventLogKeys;
  /** The bucket of the event logs, through the controller's own key. */
  store: ObjectStore;
  /** Where drivers' folders are (key prefix of `incomingDir`) and where the History Server reads (of `dir`). */
  incomingPrefix: string;
  eventLogPrefix: string;
  isLeader: () => boolean;
  log: LogFn;
}

const FIELD_MANAGER = 'submission-service';
/** After a failed step (the store or the apiserver unreachable), the application is looked at again this much later. */
const RETRY_MS = 10_000;
const status = (error: unknown): number | undefined => (error as { code?: number }).code;

export class EventLogAccess {
  /** Applications whose key is in their Secret (this leader made it, or found it). */
  private readonly granted = new Set<string>();
  /** Applications whose run was collected and key revoked. */
  private readonly collected = new Set<string>();
  /** What a new leader finds in the store: applications with rights in the policy or a folder. Loaded once per term. */
  private known?: Promise<Set<string>>;
  private queue: Promise<void> = Promise.resolve();
  private readonly pending = new Set<string>();

  constructor(private readonly options: EventLogAccessOptions) {}

  /** Something changed for this application: grant, or collect and revoke, in turn. */
  touch(appName: string): void {
    if (!this.options.keys.perApplication || !this.options.isLeader() || this.pending.has(appName)) return;
    this.pending.add(appName);
    this.queue = this.queue.then(async () => {
      this.pending.delete(appName);
      if (!this.options.isLeader()) return;
      await this.step(appName).catch((error: unknown) => {
        this.options.log(`application ${appName}: its event-log key (tried again in ${RETRY_MS / 1000} s): ${(error as Error)?.message ?? String(error)}`);
        // A driver waiting for its Secret makes no news that would touch it again: try again by itself.
        setTimeout(() => this.touch(appName), RETRY_MS).unref();
      });
    });
  }

  /** This replica became the leader: what the last one left is read again, then every application is looked at. */
  startedLeading(): void {
    this.collected.clear();
    const known = this.readKnown();
    this.known = known;
    for (const name of this.options.cache.names()) this.touch(name);
    // Also what the last leader left of applications deleted since (no record to touch them).
    known.then((names) => { for (const name of names) this.touch(name); }, (error: unknown) => {
      this.known = undefined;
      this.options.log(`event-log keys: could not read what the store holds: ${(error as Error)?.message ?? String(error)}`);
    });
  }

  /** Waits for the work queued so far (tests, shutdown). */
  idle(): Promise<void> {
    return this.queue;
  }

  private async step(appName: string): Promise<void> {
    const application = this.options.cache.application(appName);
    if (application && this.collected.has(appName)) return;
    this.known ??= this.readKnown();
    const known = await this.known.catch((error: unknown) => { this.known = undefined; throw error; });
    if (!application || isTerminal(this.options.cache.get(appName)?.state)) {
      if (this.granted.has(appName) || known.has(appName)) await this.collect(appName);
      known.delete(appName);
      // A deleted application's name is forgotten (it is not touched again); an ended one's is kept.
      if (application) this.collected.add(appName);
      else this.collected.delete(appName);
      return;
    }
    if (this.granted.has(appName)) return;
    // A new leader finds a running driver's Secret: its key stays (a new one would cut the driver off).
    if (!(known.has(appName) && await this.secretExists(appName))) await this.grant(appName, application.metadata.uid!);
    this.granted.add(appName);
  }

  /** Applications with rights in the store's policy, or a folder under the incoming directory (a collection cut short). */
  private async readKnown(): Promise<Set<string>> {
    const known = new Set(await this.options.keys.granted());
    const base = this.options.incomingPrefix ? `${this.options.incomingPrefix}/` : '';
    for await (const item of this.options.store.list(base, false)) {
      if ('prefix' in item) known.add(item.prefix.slice(base.length).replace(/\/$/, ''));
    }
    return known;
  }

  private prefix(appName: string): string {
    return appEventLogPrefix(this.options.incomingPrefix, appName);
  }

  private async grant(appName: string, uid: string): Promise<void> {
    const prefix = this.prefix(appName);
    // S3A wants the log directory to exist before it writes into it.
    await this.options.store.ensureFolder(prefix);
    const key = await this.options.keys.grant(appName, prefix);
    if (!key) return;
    const [idVariable, secretVariable] = S3_CREDENTIAL_VARIABLES;
    await this.options.clients.core.createNamespacedSecret({
      namespace: this.options.namespace,
      fieldManager: FIELD_MANAGER,
      body: {
        metadata: {
          name: eventLogSecretName(appName), labels: { [LABEL_APP]: appName },
          ownerReferences: [{ apiVersion: `${GROUP}/${VERSION}`, kind: 'Application', name: appName, uid, controller: false }],
        },
        type: 'Opaque',
        immutable: true,
        stringData: { [idVariable]: key.accessKeyId, [secretVariable]: key.secretAccessKey },
      },
    });
  }

  /** Revoke first (nothing more can be written), then move the log, then delete the folder. */
  private async collect(appName: string): Promise<void> {
    await this.options.keys.revoke(appName);
    const from = this.prefix(appName);
    const moved = await collectS3EventLogs(this.options.store, { from, to: this.options.eventLogPrefix, appName }, (entry, why) =>
      this.options.log(`application ${appName}: event log ${entry} not moved into the history: ${why}`));
    if (moved.length > 0) this.options.log(`application ${appName}: event log ${moved.join(', ')} moved into the history`);
    await this.options.store.removePrefix(`${from}/`);
    // The Secret stays until the garbage collector takes it with its Application (the service may
    // create Secrets, not delete or read them): it holds a key the store no longer knows.
    this.granted.delete(appName);
  }

  /** Whether the Secret exists, asked as a dry-run create (the service may create Secrets, never read them). */
  private async secretExists(appName: string): Promise<boolean> {
    try {
      await this.options.clients.core.createNamespacedSecret({
        namespace: this.options.namespace, dryRun: 'All', body: { metadata: { name: eventLogSecretName(appName) }, type: 'Opaque' },
      });
      return false;
    } catch (error) {
      if (status(error) === 409) return true;
      throw error;
    }
  }
}
