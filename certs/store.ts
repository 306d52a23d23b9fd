// Where the webhook's certificates live: files here; a Kubernetes Secret shared by the
// replicas in secret-store.ts, behind the same interface.
import { mkdir, readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../lib/atomic-file.js';
import { join } from 'node:path';

export interface StoredCertificates {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

export interface CertificateStore {
  /** undefined when nothing is stored yet. */
  read(): Promise<StoredCertificates | undefined>;
  write(certs: StoredCertificates): Promise<void>;
}

/** The key names of a kubernetes.io/tls Secret (plus ca.*), so a mounted Secret reads the same. */
export const FILE_NAMES = { caCert: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

export function fileCertificateStore(dir: string): CertificateStore & { paths: typeof FILE_NAMES } {
  const path = (name: string) => join(dir, name);
  return {
    paths: Object.fromEntries(Object.entries(FILE_NAMES).map(([k, v]) => [k, path(v)])) as typeof FILE_NAMES,
    async read() {
      try {
        const [caCert, caKey, cert, key] = await Promise.all(Object.values(FILE_NAMES).map((n) => readFile(path(n), 'utf8')));
        return { caCert: caCert!, caKey: caKey!, cert: cert!, key: key! };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async write(certs) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(path(FILE_NAMES.caCert), certs.caCert, 0o644);
      await writeFileAtomic(path(FILE_NAMES.caKey), certs.caKey);
      // Key before certificate: a server that reloads in between sees a mismatch and
      // keeps its previous pair until the certificate lands (certificate-watcher.ts).
      await writeFileAtomic(path(FILE_NAMES.key), certs.key);
      await writeFileAtomic(path(FILE_NAMES.cert), certs.cert, 0o644);
    },
  };
}
