// The one interface through which the API, the gateway and the dashboard launch and
// watch applications. Two implementations: local processes and Kubernetes.
import type { Readable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationState, ConfigTemplate } from '../schemas/index.js';
import type { AppRecord } from './app-record.js';
import type { EventFeed } from './events.js';
import type { SubmissionInfo } from './submission-info.js';

export type { AppRecord, Transition } from './app-record.js';

export type CreateResult =
  | { ok: true; record: AppRecord; pod: V1Pod }
  | { ok: false; status: number; body: { message: string } };

const TERMINAL = new Set<ApplicationState>(['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN']);

/** States an application does not leave. */
export const isTerminal = (state: ApplicationState | undefined): boolean => state !== undefined && TERMINAL.has(state);

export interface ListQuery {
  jobName?: string;
  state?: ApplicationState;
  /** Every one of these labels, with these values. */
  labels?: Record<string, string>;
  /** Case-insensitive substring of the appName, the jobName or a label value. */
  q?: string;
  limit: number;
  /** Opaque cursor from a previous page's `next`. */
  cursor?: string;
}

export interface Page<T> { items: T[]; next: string | null }

export interface TemplateStore {
  list(): Promise<ConfigTemplate[]>;
  get(name: string): Promise<ConfigTemplate | undefined>;
  /** Fails with ConflictError when the name is taken. */
  create(template: ConfigTemplate): Promise<ConfigTemplate>;
  /** Fails with NotFoundError when absent. */
  replace(template: ConfigTemplate): Promise<ConfigTemplate>;
  /** False when absent. */
  delete(name: string): Promise<boolean>;
}

export interface CreateOptions { dryRun: boolean; launcherToken?: string }

export interface Cluster {
  readonly kind: 'local' | 'kubernetes';
  readonly templates: TemplateStore;
  /**
   * Creates a bare driver pod through admission. dryRun: admission only, nothing is kept.
   * launcherToken: a notebook kernel's one-time token, kept where only that driver reads it and
   * named (as a file) in its env, never in its config (domain/launcher-credential.ts).
   */
  createDriver(pod: V1Pod, options: CreateOptions): Promise<CreateResult>;
  get(appName: string): Promise<AppRecord | undefined>;
  /**
   * Records `claimer` (a key id) as the claimer of a warm pool's kernel (KERNEL_CLAIMER_LABEL),
   * once: ConflictError when another key claimed it; undefined when unknown. An application with
   * no submitter (a warm Connect server the service started) gets the claimer as its submitter.
   */
  claim(appName: string, claimer: string): Promise<AppRecord | undefined>;
  list(query: ListQuery): Promise<Page<AppRecord>>;
  /**
   * Ends the application (KILLED) and keeps its record; undefined when unknown. `why`: the
   * service's own reason (idle culling, orphan sweep, warm pool), the record's stateDetail;
   * none: a user's stop ("stopped by a user"). The first stop's reason is the one kept.
   */
  stop(appName: string, why?: string): Promise<AppRecord | undefined>;
  /** Stops it and removes its record; false when unknown. */
  delete(appName: string): Promise<boolean>;
  /** The driver log (or `container` executor-N's; undefined when there is none); with follow, the stream ends when the application ends or the signal aborts. */
  log(appName: string, options: { follow: boolean; signal?: AbortSignal; container?: string }): Promise<Readable | undefined>;
  /** The submission behind an application (overrides, admission mark, sizing); undefined when unknown. */
  submission(appName: string): Promise<SubmissionInfo | undefined>;
  /** Where the running driver's Spark UI answers (the dashboard proxies it); undefined when it doesn't run. */
  sparkUiTarget(appName: string): Promise<URL | undefined>;
  /** Headers the proxy adds (after every check) to requests to that live UI: local mode's gate secret; undefined: none. */
  sparkUiHeaders?(appName: string): Record<string, string> | undefined;
  /** Every record change and deletion, resumable: the API's events stream, the dashboard and the gateway follow it. */
  readonly events: EventFeed;
  close(): Promise<void>;
}

export class ConflictError extends Error {}
export class NotFoundError extends Error {}
/** The cluster (or its webhook) cannot be reached: the API answers 503 with this message. */
export class UnavailableError extends Error {}
