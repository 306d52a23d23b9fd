// The object store's side of "a key per application" (domain/event-log-access.ts): who can make a
// key that reaches one folder only. Behind one small interface, so the controller does not care
// which store it is: versitygw's admin API (users) plus the bucket's policy (what each user may
// do), or the shared key for stores that can do neither (the chart says so at install).
import { createHash, randomBytes } from 'node:crypto';
import { signV4 } from 'minio/dist/esm/signing.mjs';
import {
  appAccessStatements, appsInPolicy, type BucketPolicy, eventLogAccessKeyId, withAppStatements, withoutAppStatements,
} from '../../domain/index.js';
import type { ObjectStore } from './object-store.js';

export interface EventLogKey { accessKeyId: string; secretAccessKey: string }

export interface EventLogKeys {
  /** Whether each application gets a key of its own; false: drivers share one (the fallback). */
  readonly perApplication: boolean;
  /** A key that may read, write and list `prefix/` (and nothing else) for this application; made again if it exists. */
  grant(appName: string, prefix: string): Promise<EventLogKey | undefined>;
  /** Takes the application's key and its rights away; nothing to do when it has none. */
  revoke(appName: string): Promise<void>;
  /** The applications that have rights now (what a new leader finds). */
  granted(): Promise<string[]>;
}

/** Stores that cannot scope a key: every driver keeps the shared Secret. */
export class SharedEventLogKey implements EventLogKeys {
  readonly perApplication = false;
  grant(): Promise<undefined> { return Promise.resolve(undefined); }
  revoke(): Promise<void> { return Promise.resolve(); }
  granted(): Promise<string[]> { return Promise.resolve([]); }
}

export interface VersityOptions {
  /** The gateway's admin API (its S3 port, unless it runs with `--admin-port`). */
  adminEndpoint: string;
  /** An admin account's key (role admin: it creates users, and bucket policies do not bind it). */
  accessKey: string;
  secretKey: string;
  region?: string;
  /** The bucket the event logs are in, through the same admin key. */
  store: ObjectStore;
}

const sha256 = (body: Buffer | string): string => createHash('sha256').update(body).digest('hex');
const amzDate = (date: Date): string => date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
const xmlText = (value: string): string => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * versitygw (1.8): users through its admin API (`PATCH /create-user`, `/delete-user`, signed
 * with SigV4 as S3 requests are), rights through the bucket's policy (principals are access key
 * ids). It has no STS and keeps identity policies in a separate IAM service, so the bucket policy
 * is the one place to say what a user may do. Only the leader calls this, one call at a time
 * (the policy is read, changed and written back).
 */
export class VersityEventLogKeys implements EventLogKeys {
  readonly perApplication = true;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: VersityOptions) {}

  grant(appName: string, prefix: string): Promise<EventLogKey> {
    return this.serial(async () => {
      const key = { accessKeyId: eventLogAccessKeyId(appName), secretAccessKey: randomBytes(30).toString('base64url') };
      // A user left from an earlier attempt gets a new secret: the old one may be in a Secret that is gone.
      await this.admin('delete-user', { access: key.accessKeyId }, undefined, true);
      const account = `<Account><Access>${xmlText(key.accessKeyId)}</Access><Secret>${xmlText(key.secretAccessKey)}</Secret><Role>user</Role></Account>`;
      await this.admin('create-user', {}, account);
      const statements = appAccessStatements(this.options.store.bucket, prefix, appName, key.accessKeyId);
      await this.options.store.setBucketPolicy(JSON.stringify(withAppStatements(await this.policy(), appName, statements)));
      return key;
    });
  }

  revoke(appName: string): Promise<void> {
    return this.serial(async () => {
      const policy = await this.policy();
      const rest = withoutAppStatements(policy, appName);
      if (JSON.stringify(rest) !== JSON.stringify(policy)) await this.options.store.setBucketPolicy(rest && JSON.stringify(rest));
      await this.admin('delete-user', { access: eventLogAccessKeyId(appName) }, undefined, true);
    });
  }

  /** The applications whose statements are in the bucket's policy (leftovers after a restart). */
  async granted(): Promise<string[]> {
    return appsInPolicy(await this.policy());
  }

  private async policy(): Promise<BucketPolicy | undefined> {
    const text = await this.options.store.bucketPolicy();
    return text ? JSON.parse(text) as BucketPolicy : undefined;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** One signed admin call; an error names the call and the answer (a user that is not there is fine when `missingIsFine`). */
  private async admin(call: string, query: Record<string, string>, body: string | undefined, missingIsFine = false): Promise<void> {
    const url = new URL(`/${call}`, this.options.adminEndpoint);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const now = new Date();
    const payload = Buffer.from(body ?? '');
    const headers: Record<string, string> = { host: url.host, 'x-amz-date': amzDate(now), 'x-amz-content-sha256': sha256(payload) };
    const path = `${url.pathname}${url.search}`;
    headers.authorization = signV4({ method: 'PATCH', path, headers } as never, this.options.accessKey, this.options.secretKey, this.options.region ?? 'us-east-1', now, headers['x-amz-content-sha256']!, 's3');
    const response = await fetch(url, { method: 'PATCH', headers, body: body === undefined ? undefined : payload, signal: AbortSignal.timeout(15_000) });
    const text = await response.text();
    if (response.ok) return;
    if (missingIsFine && (response.status === 404 || /UserNotFound|user not found|no such user/i.test(text))) return;
    throw new Error(`the store's admin API answered ${call} with ${response.status}: ${text.slice(0, 300)}`);
  }
}
