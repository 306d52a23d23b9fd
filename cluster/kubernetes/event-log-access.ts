// The controller's part of "object storage per application" (domain/event-log-access.ts), run by
// the leader: when an Application is first seen it gets a key that reaches only its own folder,
// in a Secret it owns (the garbage collector removes it with it), which admission named in its
// driver's env; once the run has ended the key is revoked first (the driver can write nothing
// more), then its event log is moved into the History Server's directory and the folder and the
// its folder deleted. A controller of the manager (manager.ts), keyed by application name: one
// worker, so one application at a time (the store's policy is read, changed and written back);
// a failed step (the store or the apiserver unreachable) is retried after the key's backoff.
import { isTerminal } from '../cluster.js';
import { appEventLogPrefix, eventLogSecretName, LABEL_APP, S3_CREDENTIAL_VARIABLES } from '../../domain/index.js';
import { collectS3EventLogs } from '../history/collect-s3-event-log.js';
import type { EventLogKeys } from '../history/event-log-keys.js';
import type { ObjectStore } from '../history/object-store.js';
import type { AppCache } from './app-cache.js';
import { GROUP, type KubeClients, VERSION } from './client.js';
import { Controller } from './controller.js';
import type { Registration } from './manager.js';
import type { WorkQueueOptions } from './work-queue.js';
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
  /** Every application is looked at again this often (default 5 min). */
  resyncMs?: number;
  /** The work queue's backoff, timers and clock (tests pass a fake clock). */
  queue?: WorkQueueOptions;
}

const FIELD_MANAGER = 'submission-service';
const status = (error: unknown): number | undefined => (error as { code?: number }).code;

export class EventLogAccess {
  readonly controller: Controller;
  /** Applications whose key is in their Secret (this leader made it, or found it). */
  private readonly granted = new Set<string>();
  /** Applications whose run was collected and key revoked. */
  private readonly collected = new Set<string>();
  /** What a new leader finds in the store: applications with rights in the policy or a folder. Loaded once per term. */
  private known?: Promise<Set<string>>;
  private loading: Promise<void> = Promise.resolve();

  constructor(private readonly options: EventLogAccessOptions) {
    const perApplication = options.keys.perApplication;
    this.controller = new Controller({
      name: 'event-log-keys', workers: 1, resyncMs: options.resyncMs, mayWrite: options.isLeader,
      // A driver waiting for its Secret makes no news that would queue it again: the backoff does.
      queue: { baseMs: 1_000, maxMs: 60_000, ...options.queue },
      keys: () => (perApplication ? options.cache.names() : []),
      reconcile: async (appName, context) => { if (context.mayWrite()) await this.step(appName); },
      onError: (appName, error, retryMs) => options.log(`application ${appName}: its event-log key (tried again in ${Math.round(retryMs / 100) / 10} s): ${(error as Error)?.message ?? String(error)}`),
    });
  }

  /** What the manager needs: an Application's change queues its name; a new term reads the store again. */
  get registration(): Registration {
    return {
      controller: this.controller,
      application: (appName) => (this.options.keys.perApplication ? [appName] : []),
      onStartedLeading: () => this.startedLeading(),
    };
  }

  /** Resolves once what the store held at the start of the term is read and queued (tests). */
  loaded(): Promise<void> {
    return this.loading;
  }

  /** This replica became the leader: what the last one left is read again (the cache's names are queued by the controller). */
  private startedLeading(): void {
    if (!this.options.keys.perApplication) return;
    this.collected.clear();
    const known = this.readKnown();
    this.known = known;
    // Also what the last leader left of applications deleted since (no record to queue them).
    this.loading = known.then((names) => { for (const name of names) this.controller.enqueue(name); }, (error: unknown) => {
      this.known = undefined;
      this.options.log(`event-log keys: could not read what the store holds: ${(error as Error)?.message ?? String(error)}`);
    });
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
