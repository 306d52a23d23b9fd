// Serving certificate and key read from files and reloaded when they change, so a
// rotated certificate is served without a restart. Files are re-read by path on a
// timer (and sooner on a file-system event): a Kubernetes Secret volume swaps a
// symlink rather than writing the files, which path-based reads see and inode watches miss.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { oneAfterAnother } from '../../lib/one-after-another.js';

export interface CertificatePair { cert: Buffer; key: Buffer }

export interface CertificateWatcherOptions {
  certFile: string;
  keyFile: string;
  /** Backstop re-read period; file events usually trigger a check much sooner. */
  intervalMs?: number;
  onReload: (pair: CertificatePair) => void;
  onError?: (error: Error) => void;
}

export interface CertificateWatcher {
  current(): CertificatePair;
  /** Re-reads the files now; true when a new pair was loaded. */
  check(): Promise<boolean>;
  close(): void;
}

async function readPair(certFile: string, keyFile: string): Promise<CertificatePair> {
  const [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  // Throws on a key that does not belong to the certificate, e.g. between the two
  // renames of a rotation; the caller then keeps serving the previous pair.
  createSecureContext({ cert, key });
  return { cert, key };
}

const samePair = (a: CertificatePair, b: CertificatePair) => a.cert.equals(b.cert) && a.key.equals(b.key);

/** Loads the pair (rejecting when it is unusable) and keeps it current. */
export async function watchCertificates(options: CertificateWatcherOptions): Promise<CertificateWatcher> {
  let pair = await readPair(options.certFile, options.keyFile);
  let lastError = '';

  const reload = async (): Promise<boolean> => {
    try {
      const next = await readPair(options.certFile, options.keyFile);
      lastError = '';
      if (samePair(next, pair)) return false;
      pair = next;
      options.onReload(pair);
      return true;
    } catch (error) {
      // Report a broken state once, not at every tick while it lasts.
      const message = (error as Error).message;
      if (message !== lastError) options.onError?.(error as Error);
      lastError = message;
      return false;
    }
  };
  // One read at a time, each after the one before: a read under way may have begun before the
  // caller's latest write (a file event of its first rename), so joining it could miss the pair.
  const check = oneAfterAnother(reload);

  const timer = setInterval(() => void check(), options.intervalMs ?? 10_000);
  timer.unref();
  let debounce: NodeJS.Timeout | undefined;
  const soon = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => void check(), 50);
    debounce.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
    try {
      watchers.push(watch(dir, { persistent: false }, soon).on('error', () => undefined));
    } catch {
      // No file events here (inotify limits, some network file systems): the timer still works.
    }
  }

  return {
    current: () => pair,
    check,
    close: () => {
      clearInterval(timer);
      clearTimeout(debounce);
      for (const w of watchers) w.close();
    },
  };
}
