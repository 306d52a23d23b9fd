// The webhook's CA and serving certificate in a Kubernetes Secret, shared by every replica.
//
// Layout: the keys of a kubernetes.io/tls Secret (`tls.crt`, `tls.key`) plus `ca.crt` (the
// signing CA first, then older CAs still trusted) and `ca.key`, base64 in `data`, so the
// Secret can also be mounted and read as files (FILE_NAMES of store.ts).
//
// Concurrency: every write is conditional on the version this store last read (the
// Secret's resourceVersion), or a create when the Secret was absent. When another replica
// wrote in between, the apiserver answers 409 and write() rejects with a
// CertificateConflictError instead of overwriting: the caller decides. The usual decision,
// taken by ensureSharedCertificates below, is to read again and adopt what the other
// replica wrote if it is usable (rotationReason 'none'), else to renew on top of it. Two
// replicas starting on an empty Secret therefore end with one CA and one serving pair: one
// write wins, the other gets 409 and takes the winner's.
//
// The Secret's type is immutable and a kubernetes.io/tls Secret may not be empty, so a
// Secret that exists keeps its type (the Helm chart creates it empty, type Opaque, so that
// the webhook needs no `create` on secrets); a Secret this store has to create itself is
// created as kubernetes.io/tls.
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { statusCode } from '../lib/api-error.js';
import { ensureCertificates, type EnsureOptions, type EnsureResult } from './rotation.js';
import { type CertificateStore, FILE_NAMES, type StoredCertificates } from './store.js';
import { retry } from '../lib/retry.js';

export interface SecretStoreOptions {
  core: CoreV1Api;
  namespace: string;
  name: string;
}

export interface SecretCertificateStore extends CertificateStore {
  readonly namespace: string;
  readonly name: string;
  /** resourceVersion of the Secret as last read or written; undefined: absent (or not read yet). */
  readonly resourceVersion: string | undefined;
}

/** Another writer changed the Secret since this store read it; nothing was written. */
export class CertificateConflictError extends Error {
  readonly code = 409;
  constructor(namespace: string, name: string, cause: unknown) {
    super(`Secret ${namespace}/${name} was changed by another writer since it was read`, { cause });
    this.name = 'CertificateConflictError';
  }
}


const KEYS = Object.entries(FILE_NAMES) as [keyof StoredCertificates, string][];

/** The four PEMs from a Secret's data; undefined when any is missing or empty. */
export function certificatesFromSecret(secret: V1Secret | undefined): StoredCertificates | undefined {
  const data = secret?.data ?? {};
  const entries = KEYS.map(([field, key]) => [field, Buffer.from(data[key] ?? '', 'base64').toString('utf8')] as const);
  if (entries.some(([, pem]) => pem === '')) return undefined;
  return Object.fromEntries(entries) as unknown as StoredCertificates;
}

function secretData(certs: StoredCertificates): Record<string, string> {
  return Object.fromEntries(KEYS.map(([field, key]) => [key, Buffer.from(certs[field], 'utf8').toString('base64')]));
}

export function secretCertificateStore(options: SecretStoreOptions): SecretCertificateStore {
  const { core, namespace, name } = options;
  /** What the last read or write saw: undefined = never read; null = the Secret is absent. */
  let seen: V1Secret | null | undefined;

  const read = async (): Promise<StoredCertificates | undefined> => {
    try {
      seen = await core.readNamespacedSecret({ name, namespace });
    } catch (error) {
      if (statusCode(error) !== 404) throw error;
      seen = null;
    }
    return certificatesFromSecret(seen ?? undefined);
  };

  return {
    namespace,
    name,
    get resourceVersion() { return seen?.metadata?.resourceVersion; },
    read,
    async write(certs) {
      if (seen === undefined) await read(); // a write is always conditional on a version read
      const data = secretData(certs);
      try {
        if (seen === null) {
          // Absent: create. A concurrent creator makes this fail with 409 AlreadyExists.
          seen = await core.createNamespacedSecret({
            namespace,
            body: { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'kubernetes.io/tls', data },
          });
          return;
        }
        const current = seen!;
        // Replace, carrying the resourceVersion read: 409 Conflict when it is no longer current.
        // Labels, annotations and keys other than ours are kept; the type cannot change.
        seen = await core.replaceNamespacedSecret({
          name,
          namespace,
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { ...current.metadata, name, namespace, resourceVersion: current.metadata?.resourceVersion },
            type: current.type,
            data: { ...current.data, ...data },
          },
        });
      } catch (error) {
        if (statusCode(error) === 409) {
          seen = undefined; // unknown now: the next read (or write) fetches it again
          throw new CertificateConflictError(namespace, name, error);
        }
        throw error;
      }
    },
  };
}

export interface SharedEnsureOptions extends EnsureOptions {
  /** How many times a write that lost a race is retried on what won it. Default 5. */
  attempts?: number;
}

/**
 * ensureCertificates on a store other processes write too: a write that lost a race
 * (CertificateConflictError) is retried on what is stored now, which adopts the other
 * writer's pair when it is usable and renews on top of it otherwise. `reason` is that of
 * the last attempt ('none' after adopting).
 */
export async function ensureSharedCertificates(store: CertificateStore, options: SharedEnsureOptions): Promise<EnsureResult> {
  // A conflict means another replica wrote first: read again and adopt what it wrote.
  return retry(() => ensureCertificates(store, options), {
    attempts: options.attempts ?? 5, retryOn: (error) => error instanceof CertificateConflictError, delayMs: () => 0,
  });
}
