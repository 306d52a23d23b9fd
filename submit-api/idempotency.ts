// POST /api/apps/ with an Idempotency-Key header (the IETF draft "The Idempotency-Key HTTP
// Header Field"): a retried submission answers the application the first one made instead of
// starting a second run. The application itself is the record of the key: its name is derived
// from the caller's key id and the idempotency key (so a create race between API replicas, or
// between requests of one process, is settled by the name being taken: local mode's record
// store and the apiserver both refuse a second create of one name), and it carries the
// fingerprint of the body that made it (cluster/app-record.ts, ANNOTATION_IDEMPOTENCY).
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_IDEMPOTENCY, type AppRecord } from '../cluster/app-record.js';
import { type Cluster, ConflictError } from '../cluster/cluster.js';
import { canonicalJson } from '../cluster/kubernetes/expected-admission.js';
import { parseDuration } from '../lib/duration.js';
import { KeyedSerial } from '../lib/keyed-serial.js';
import type { Submission } from '../schemas/index.js';
import { HttpError } from './errors.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;
/** Names tried per key once earlier ones are past the window: a bound, never reached in practice. */
const MAX_GENERATIONS = 1000;
const MAX_KEY_LENGTH = 255;

/**
 * The key from the header: an sf-string (RFC 8941: `"…"`, printable ASCII, `\"` and `\\`
 * escaped), or, as many clients send it, the bare characters of one (no quotes, no spaces).
 * undefined when absent; HttpError 400 when malformed or sent twice.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const malformed = (why: string) => new HttpError(400, `Idempotency-Key ${why}; send one quoted string such as "8e03978e-40d5-43e8-bc93-6894a57f9324" (at most ${MAX_KEY_LENGTH} characters)`, { field: 'Idempotency-Key', code: 'IDEMPOTENCY_KEY_MALFORMED' });
  if (Array.isArray(header) || header.includes(',') && !header.trim().startsWith('"')) throw malformed('is sent more than once');
  const text = header.trim();
  let key: string;
  if (text.startsWith('"')) {
    const match = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(text);
    if (!match) throw malformed('is not a valid string');
    key = match[1].replace(/\\(["\\])/g, '$1');
  } else {
    if (!/^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]+$/.test(text)) throw malformed('is not a valid string');
    key = text;
  }
  if (key.length === 0) throw malformed('is empty');
  if (key.length > MAX_KEY_LENGTH) throw malformed('is too long');
  return key;
}

/** The body's fingerprint: a hash of its canonical JSON (key order does not matter). */
export function bodyFingerprint(body: Submission): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex').slice(0, 32);
}

/** The key scoped to its caller (a key id; `-` with authentication off), as a hash. */
export function scopedKeyHash(callerId: string | undefined, key: string): string {
  return createHash('sha256').update(`${callerId ?? '-'}\n${key}`).digest('hex').slice(0, 32);
}

/** The application name of a key's generation n (a new generation once the previous one is past the window). */
export const idempotentAppName = (keyHash: string, generation: number): string => `idem-${keyHash.slice(0, 24)}-${generation}`;

/** `--idempotency-window`: 24h, 90m, 45s, 2d (a bare number: seconds). */
export function parseIdempotencyWindow(text: string): number {
  const ms = parseDuration(text, 's');
  if (ms === undefined || !(ms > 0)) throw new Error(`--idempotency-window takes a duration such as 24h, 90m or 45s; got "${text}"`);
  return ms;
}

export type IdempotentOutcome =
  | { kind: 'replay'; record: AppRecord }
  | { kind: 'create'; appName: string; mark: string };

export class Idempotency {
  // One request per key at a time in this process: 50 identical requests make one create and 49 replays.
  private readonly serial = new KeyedSerial();

  constructor(private readonly cluster: Cluster, readonly windowMs = DEFAULT_IDEMPOTENCY_WINDOW_MS) {}

  /**
   * Runs `create` (with the application name and fingerprint mark to use) unless an application
   * made with this key inside the window exists: then its record (same body) or 422 (another body).
   */
  async submit<T>(keyHash: string, fingerprint: string, create: (appName: string, mark: string) => Promise<T>, replay: (record: AppRecord) => T): Promise<T> {
    return this.serial.run(keyHash, async () => {
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const outcome = await this.lookup(keyHash, fingerprint);
        if (outcome.kind === 'replay') return replay(outcome.record);
        try {
          return await create(outcome.appName, outcome.mark);
        } catch (error) {
          // Another replica (or a record not yet seen here) took the name: look again.
          if (!(error instanceof ConflictError)) throw error;
          await this.visible(outcome.appName);
        }
      }
      throw new HttpError(409, 'a request with this Idempotency-Key is still being processed; retry it');
    });
  }

  private async lookup(keyHash: string, fingerprint: string): Promise<IdempotentOutcome> {
    const now = Date.now();
    for (let generation = 0; generation < MAX_GENERATIONS; generation += 1) {
      const appName = idempotentAppName(keyHash, generation);
      const record = await this.cluster.get(appName);
      const mark = `${keyHash}.${fingerprint}`;
      if (!record) return { kind: 'create', appName, mark };
      if (now - Date.parse(record.createdAt) >= this.windowMs) continue;
      if (record.idempotency !== undefined && record.idempotency !== mark) {
        throw new HttpError(422, `this Idempotency-Key was used with another request body (application ${record.appName}); use a new key for another submission`, { code: 'IDEMPOTENCY_KEY_REUSED' });
      }
      return { kind: 'replay', record };
    }
    throw new HttpError(422, 'this Idempotency-Key has been used too many times; use a new key', { code: 'IDEMPOTENCY_KEY_REUSED' });
  }

  /** Waits (a bounded while) until an application created elsewhere shows in this process's reads (Kubernetes mode: the informer's cache). */
  private async visible(appName: string): Promise<void> {
    for (let waited = 0; waited < 10_000; waited += 50) {
      if (await this.cluster.get(appName)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** The driver pod with the idempotency mark, for the cluster to keep on the application. */
export function withIdempotencyMark(pod: V1Pod, mark: string): V1Pod {
  return { ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [ANNOTATION_IDEMPOTENCY]: mark } } };
}
