// Ended runs' history pages, kept in the proxy's memory. Once a run's event log is final (Spark
// closed it), Spark's History Server renders the same bytes for the same path for ever, yet it
// renders them again for every request (a 10,000-task run's job page: 0.1–0.9 s under load), and
// Spark's own scripts and styles come back with `no-store`, so every page view fetched some twenty
// of them again through the proxy. This keeps both: a byte-capped LRU (lru-cache) of 200 answers.
// Who may read an entry is decided before any lookup (spark-ui-proxy.ts): the same checks as for a
// request the History Server answers. A live UI, and a run whose log is still open (a killed
// driver's), are never kept.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { LRUCache } from 'lru-cache';
import { counter, gauge, METRIC_PREFIX } from '../lib/metrics.js';
import { isStaticAsset } from './spark-ui-access.js';

/** What the cache holds of one answer: always a 200, its headers as the viewer gets them. */
export interface CachedPage {
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

/** What decides whether (and under which key) a request's answer may be kept. */
export interface CacheableRequest {
  method: string;
  /** The run the History Server serves for this application; undefined: the live UI answers. */
  run: { sparkAppId: string; completed: boolean } | undefined;
  /** The application's proxy prefix: the page's links start with it. */
  prefix: string;
  /** The History Server's path (history-paths.ts) and the query ('' or `?…`). */
  path: string;
  query: string;
  /** Whether the viewer takes gzip (what the History Server sends browsers). */
  gzip: boolean;
}

/** Spark's own scripts and styles from the History Server: a browser may keep them a day (they change only with Spark). */
export const STATIC_CACHE_CONTROL = 'public, max-age=86400';

/** Headers of the History Server's answer that belong to one connection, not to the page. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'content-length', 'trailer', 'upgrade']);

const lookups = counter<'outcome'>({
  name: `${METRIC_PREFIX}history_page_cache_requests_total`,
  help: "Requests for an ended run's history pages that could be answered from the proxy's cache, by outcome (hit, miss)",
  labelNames: ['outcome'],
});
const bytesHeld = gauge({
  name: `${METRIC_PREFIX}history_page_cache_bytes`,
  help: "Bytes of history pages held in the proxy's cache",
});

/** Whether an Accept-Encoding header takes gzip (`gzip` or `*`, not with q=0). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : header ?? '';
  return value.split(',').some((part) => {
    const [coding, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    return (coding === 'gzip' || coding === '*') && !(q && Number(q.slice(2)) === 0);
  });
}

/**
 * The cache key of a request's answer, or undefined when it must not be kept: not a GET or HEAD,
 * the live UI, or a page of a run whose log is not final. Spark's static files are the History
 * Server's own (the same for every run), so they are kept once for all runs; a run's pages are
 * kept per application prefix and run.
 */
export function cacheKey(request: CacheableRequest): string | undefined {
  const { run } = request;
  if ((request.method !== 'GET' && request.method !== 'HEAD') || !run) return undefined;
  if (isStaticAsset(request.method, request.path, request.query)) return staticCacheKey(request.path, request.gzip);
  const coding = request.gzip ? 'gzip' : 'identity';
  if (!run.completed) return undefined;
  return `page ${coding} ${request.prefix} ${run.sparkAppId} ${request.path}${request.query}`;
}

/** The key of one of Spark's static files (`/static/…`): no application or run in it, the same for all. */
export const staticCacheKey = (path: string, gzip: boolean): string => `static ${gzip ? 'gzip' : 'identity'} ${path}`;

export interface HistoryPageCacheOptions {
  /** All entries together (bodies and headers) stay under this many bytes. */
  maxBytes: number;
  /** A bigger answer is passed on and not kept. */
  maxEntryBytes: number;
}

/** Byte-capped, least recently used first out. */
export class HistoryPageCache {
  readonly maxEntryBytes: number;
  private readonly entries: LRUCache<string, CachedPage>;

  constructor(options: HistoryPageCacheOptions) {
    this.maxEntryBytes = Math.min(options.maxEntryBytes, options.maxBytes);
    this.entries = new LRUCache<string, CachedPage>({
      maxSize: options.maxBytes,
      maxEntrySize: this.maxEntryBytes,
      sizeCalculation: entrySize,
      dispose: () => { this.report(); },
    });
  }

  /** The entry (counted as a hit or a miss), making it the most recently used. */
  get(key: string): CachedPage | undefined {
    const entry = this.entries.get(key);
    lookups.inc({ outcome: entry ? 'hit' : 'miss' });
    return entry;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Keeps a 200 answer; one over the entry cap is not kept. */
  set(key: string, headers: OutgoingHttpHeaders | IncomingMessage['headers'], body: Buffer): void {
    const kept: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name.toLowerCase())) kept[name.toLowerCase()] = value;
    }
    this.entries.set(key, { headers: kept, body });
    this.report();
  }

  /** Bytes held (bodies and headers). */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }

  private report(): void {
    bytesHeld.set(this.entries.calculatedSize);
  }
}

function entrySize(entry: CachedPage): number {
  let size = entry.body.length;
  for (const [name, value] of Object.entries(entry.headers)) size += name.length + String(value).length;
  return Math.max(1, size);
}

/** Answers from the cache (HEAD: the headers only); headers set on `res` before (a cookie's renewal) stay. */
export function sendCached(res: ServerResponse, method: string, entry: CachedPage): void {
  res.writeHead(200, { ...entry.headers, 'content-length': entry.body.length });
  res.end(method === 'HEAD' ? undefined : entry.body);
}

/**
 * Collects an answer as it streams to the viewer, up to `maxBytes`: the body once it ended, or
 * undefined when it was bigger, cut short, or not a 200.
 */
export function collectAnswer(answer: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((done) => {
    const declared = Number(answer.headers['content-length'] ?? 0);
    if (answer.statusCode !== 200 || declared > maxBytes) { done(undefined); return; }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) { stop(); done(undefined); return; }
      chunks.push(chunk);
    };
    const onEnd = () => {
      const body = answer.complete ? Buffer.concat(chunks, size) : undefined;
      stop();
      done(body);
    };
    const onClose = () => { stop(); done(undefined); };
    const stop = () => {
      answer.off('data', onData);
      answer.off('end', onEnd);
      answer.off('close', onClose);
      chunks.length = 0;
    };
    answer.on('data', onData);
    answer.once('end', onEnd);
    answer.once('close', onClose);
  });
}
