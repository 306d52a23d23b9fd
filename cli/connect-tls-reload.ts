// The Spark Connect endpoint's certificate followed while it runs, when it comes from files
// (--connect-tls-cert/--connect-tls-key; the chart's connect.existingSecret mounts a
// kubernetes.io/tls Secret there, which cert-manager rotates). Kubelet updates a Secret volume by
// writing a new folder and swapping the `..data` link the files point through, so the files'
// folders are watched (a watch on a file would follow its old target and go quiet once that is
// removed), with a slow re-read as well where the file system sends no events. A new pair is
// served to new connections only once it holds together; a broken one (unreadable, not PEM, a key
// of another certificate, expired, half written) leaves the old one served, and the log says why.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';

export interface KeyPairFiles { certFile: string; keyFile: string }
export interface KeyPair { cert: string; key: string }

/** What goes wrong with a pair of PEM texts, or undefined when a server can serve it. */
export function keyPairProblem(pair: KeyPair, now = new Date()): string | undefined {
  try {
    const cert = new X509Certificate(pair.cert);
    if (!cert.checkPrivateKey(createPrivateKey(pair.key))) return 'the key is not the certificate\'s';
    if (new Date(cert.validTo) <= now) return `the certificate expired on ${cert.validTo}`;
    createSecureContext(pair);
    return undefined;
  } catch (error) {
    return `not a PEM certificate and key (${(error as Error).message})`;
  }
}

export interface KeyPairWatchOptions {
  files: KeyPairFiles;
  /** The pair served now (read at start). */
  served: KeyPair;
  /** Serves a new pair to new connections. */
  apply: (pair: KeyPair) => void;
  log: { info: (message: string) => void; warn: (message: string) => void };
  /** Events are gathered this long before the files are read (a swap is several events). */
  settleMs?: number;
  /** The slow re-read, for file systems that send no events. */
  pollMs?: number;
}

/** Follows the files until closed. */
export function watchKeyPair(options: KeyPairWatchOptions): { close: () => void } {
  const { files, log } = options;
  let served = options.served;
  let refused: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const check = async () => {
    timer = undefined;
    const pair = await Promise.all([readFile(files.certFile, 'utf8'), readFile(files.keyFile, 'utf8')])
      .then(([cert, key]) => ({ cert, key }), (error: Error) => ({ unreadable: error.message }));
    if (closed) return;
    if ('unreadable' in pair) return refuse(`cannot read the files (${pair.unreadable})`, pair.unreadable);
    if (pair.cert === served.cert && pair.key === served.key) return;
    const problem = keyPairProblem(pair);
    if (problem) return refuse(problem, `${pair.cert}\n${pair.key}`);
    options.apply(pair);
    served = pair;
    refused = undefined;
    log.info(`Spark Connect endpoint: serving the new certificate of ${files.certFile} to new connections`);
  };
  // Said once per broken content, not at every re-read.
  const refuse = (problem: string, seen: string) => {
    if (refused === seen) return;
    refused = seen;
    log.warn(`Spark Connect endpoint: kept its certificate, the new files are not a pair it can serve: ${problem}`);
  };
  const soon = () => {
    if (closed || timer) return;
    timer = setTimeout(() => { void check(); }, options.settleMs ?? 200);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(files.certFile), dirname(files.keyFile)])) {
    try {
      const watcher = watch(dir, { persistent: false }, soon);
      watcher.on('error', (error) => log.warn(`Spark Connect endpoint: stopped watching ${dir} (${error.message}); its certificate is re-read every few minutes`));
      watchers.push(watcher);
    } catch (error) {
      log.warn(`Spark Connect endpoint: cannot watch ${dir} (${(error as Error).message}); its certificate is re-read every few minutes`);
    }
  }
  const poll = setInterval(soon, options.pollMs ?? 5 * 60_000);
  poll.unref();
  return {
    close: () => {
      closed = true;
      clearInterval(poll);
      if (timer) clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
