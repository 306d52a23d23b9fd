// Spark's static files (its UI's scripts, styles, images) under a path that names their Spark
// version: `{prefix}/static/spark-<version>/<file>`. Spark versions ship different files under
// the same names (4.x: Bootstrap 5, other DataTables, its own page scripts), and a sandboxed page
// fetches them without any cookie, so which version's file it needs cannot come from the
// application it names without telling anyone who asks whether that application exists and
// which Spark it runs. The proxy writes the version into the pages' links instead (the live UI:
// the run's engineVersion; the history: the History Server's own Spark), and a request for a
// versioned path is answered from that version's files alone: the same answer for every name,
// existing or not, with any key or none (docs/security.md, "The Spark UI").
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import { createGunzip, createGzip, gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SPARK_STATIC_PATH } from '../cluster/history/spark-static-path.js';
import { acceptsGzip, type HistoryPageCache, sendCached, STATIC_CACHE_CONTROL, staticCacheKey } from './history-cache.js';
import { forViewer } from './spark-ui-access.js';

/** A Spark version as it may appear in a path (engineVersion's form). */
const VERSION = /^\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const VERSIONED = /^\/static\/spark-(\d{1,3}\.\d{1,3}\.\d{1,3})(\/.+)$/;

/** `rest` (after the application's prefix) as a versioned static path: the version and the file's own `/static/…` path. */
export function versionedStaticPath(rest: string): { version: string; file: string } | undefined {
  const match = VERSIONED.exec(rest);
  if (!match) return undefined;
  const file = `/static${match[2]!}`;
  return SPARK_STATIC_PATH.test(file) ? { version: match[1]!, file } : undefined;
}

/** What a page's static links become: `{prefix}/static/…` → `{prefix}/static/spark-<version>/…`. */
export function staticLinkRewrite(prefix: string, version: string): { from: string; to: string } | undefined {
  if (!VERSION.test(version)) return undefined;
  return { from: `${prefix}/static/`, to: `${prefix}/static/spark-${version}/` };
}

/** Every `from` in `text` replaced by `to`, as bytes (latin1 keeps any other byte as it is). */
export function rewriteLinks(body: Buffer, rewrite: { from: string; to: string }): Buffer {
  return Buffer.from(body.toString('latin1').replaceAll(rewrite.from, rewrite.to), 'latin1');
}

/** A whole answer's body rewritten, through its gzip when it has one (the cache keeps answers as sent). */
export function rewriteAnswerBody(body: Buffer, contentEncoding: unknown, rewrite: { from: string; to: string }): Buffer {
  if (contentEncoding === 'gzip') return gzipSync(rewriteLinks(gunzipSync(body, { maxOutputLength: 64 * 1024 * 1024 }), rewrite));
  return rewriteLinks(body, rewrite);
}

/**
 * A versioned script's own template paths: Spark's scripts fetch their tables' HTML templates by
 * paths they build (`uiRoot + "/static/" + name + "-template.html"`), which no page rewrite can
 * reach, so a 4.x page would get the installation's own (3.5.7) templates. Within a version's
 * scripts those paths name that version too: the same answer for every name, as the file itself.
 */
export function versionedScript(body: Buffer, version: string): Buffer {
  if (!VERSION.test(version)) return body;
  const text = body.toString('latin1');
  return Buffer.from(text.replaceAll('"/static/"', `"/static/spark-${version}/"`).replaceAll('\'/static/\' +', `'/static/spark-${version}/' +`), 'latin1');
}

/** Whether an answer is a page whose links are rewritten: a 200 of HTML, plain or gzip (Jetty's only coding). */
export function isRewritablePage(statusCode: number | undefined, headers: Record<string, unknown>): boolean {
  const type = String(headers['content-type'] ?? '');
  const coding = headers['content-encoding'];
  return statusCode === 200 && /^text\/html\b/i.test(type) && (coding === undefined || coding === 'gzip' || coding === 'identity');
}

/**
 * The streaming form, for pages passed on as they arrive: the last `from.length - 1` characters
 * wait for the next chunk, so a link split between two chunks is rewritten too.
 */
export class LinkRewriter extends Transform {
  private tail = '';

  constructor(private readonly rewrite: { from: string; to: string }) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const text = this.tail + chunk.toString('latin1');
    const { from, to } = this.rewrite;
    let out = '';
    let at = 0;
    for (let found = text.indexOf(from, at); found >= 0; found = text.indexOf(from, at)) {
      out += text.slice(at, found) + to;
      at = found + from.length;
    }
    const keep = Math.max(at, text.length - (from.length - 1));
    out += text.slice(at, keep);
    this.tail = text.slice(keep);
    done(null, Buffer.from(out, 'latin1'));
  }

  override _flush(done: TransformCallback): void {
    done(null, Buffer.from(this.tail, 'latin1'));
  }
}

/** Spark's `/api/v1/version` answer: `{"spark": "3.5.7"}`. */
const VERSION_ANSWER_BYTES = 4096;

/**
 * The Spark version of each History Server (by address), asked once a minute at most: the
 * history pages' static links name it, since it renders every run's pages with its own files.
 */
export class ServerVersions {
  private readonly known = new Map<string, { at: number; version: Promise<string | undefined> }>();

  constructor(private readonly ttlMs = 60_000) {}

  of(server: URL, headers?: Readonly<Record<string, string>>): Promise<string | undefined> {
    const kept = this.known.get(server.href);
    if (kept && Date.now() - kept.at < this.ttlMs) return kept.version;
    const version = askVersion(server, headers);
    this.known.set(server.href, { at: Date.now(), version });
    void version.then((found) => { if (!found) this.known.delete(server.href); });
    return version;
  }
}

async function askVersion(server: URL, headers?: Readonly<Record<string, string>>): Promise<string | undefined> {
  try {
    const response = await fetch(new URL('/api/v1/version', server), { headers, redirect: 'error', signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    if (!response.ok || text.length > VERSION_ANSWER_BYTES) return undefined;
    const spark = (JSON.parse(text) as { spark?: unknown }).spark;
    return typeof spark === 'string' && VERSION.test(spark) ? spark : undefined;
  } catch {
    return undefined;
  }
}

/** Headers of one connection, not of the answer: Node writes its own. */
const HOP_HEADERS = ['connection', 'keep-alive', 'transfer-encoding'];

/**
 * A proxied answer passed on to the viewer by the proxy itself (http-proxy's selfHandleResponse):
 * a page's static links rewritten as it streams (through its gzip), anything else as it is.
 * Its headers are the upstream's as the proxy left them (already fit for the viewer).
 */
export function passOnRewritten(answer: IncomingMessage, res: ServerResponse, method: string, rewrite: { from: string; to: string }): void {
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  for (const name of HOP_HEADERS) delete headers[name];
  const page = method === 'GET' && isRewritablePage(answer.statusCode, headers);
  if (page) delete headers['content-length'];
  res.writeHead(answer.statusCode ?? 502, headers);
  const steps: NodeJS.ReadWriteStream[] = !page ? [] : headers['content-encoding'] === 'gzip'
    ? [createGunzip(), new LinkRewriter(rewrite), createGzip()]
    : [new LinkRewriter(rewrite)];
  // An upstream or viewer error destroys every stream of the chain (the viewer's answer is cut).
  pipeline([answer, ...steps, res], () => undefined);
}

/** A file every Spark UI since 2.x ships: whether a version's files are at hand at all. */
const PROBE_FILE = '/static/webui.js';

/**
 * Which versions' files a source has, asked once a minute at most. A page is rewritten only for
 * a version at hand (Kubernetes without the runtimes' files has the History Server's alone): the
 * others keep Spark's own links, which reach the driver for a signed-in viewer as before.
 */
export class VersionsAtHand {
  private readonly known = new Map<string, { at: number; has: Promise<boolean> }>();

  constructor(private readonly source: (rest: string, version?: string) => Promise<unknown>, private readonly ttlMs = 60_000) {}

  has(version: string): Promise<boolean> {
    const kept = this.known.get(version);
    if (kept && Date.now() - kept.at < this.ttlMs) return kept.has;
    const has = this.source(PROBE_FILE, version).then((file) => file !== undefined, () => false);
    this.known.set(version, { at: Date.now(), has });
    return has;
  }
}

/**
 * How the proxy's pages are rewritten, given where Spark's static files come from (none: never):
 * a live page for its run's version, a history page for its History Server's, each only when
 * that version's files are at hand.
 */
export function linkRewrites(source: ((rest: string, version?: string) => Promise<unknown>) | undefined) {
  const serverVersions = new ServerVersions();
  const atHand = source && new VersionsAtHand(source);
  const rewriteFor = async (prefix: string, version: string | undefined) =>
    version && await atHand?.has(version) ? staticLinkRewrite(prefix, version) : undefined;
  const historyRewrite = async (prefix: string, server: URL, headers?: Readonly<Record<string, string>>) =>
    atHand ? rewriteFor(prefix, await serverVersions.of(server, headers)) : undefined;
  return { rewriteFor, historyRewrite };
}

const notFound = (reply: FastifyReply, message: string) =>
  reply.code(404).type('application/json').send({ message, statusCode: 404, error: 'Not Found' });

/**
 * Spark's static file without any application looked up, nothing started, the same answer for
 * every name: a versioned path's from that version's files (any caller); an unversioned one for
 * a request without cookie or key (a sandboxed page's script asking by a path it made) from the
 * installation's own Spark, else the one the History Server gave for all runs (history-cache.ts);
 * else the same 404.
 */
export async function staticAsset(request: FastifyRequest, reply: FastifyReply, rest: string, from: { sparkStatic?: (rest: string, version?: string) => Promise<{ body: Buffer; contentType: string } | undefined>; version?: string; cache?: HistoryPageCache; sandboxed: boolean }) {
  const file = await from.sparkStatic?.(rest, from.version).catch(() => undefined);
  if (from.version !== undefined && !file) return notFound(reply, `Spark ${from.version} has no such static file here.`);
  const body = file && from.version !== undefined && /javascript/.test(file.contentType) ? versionedScript(file.body, from.version) : file?.body;
  const entry = file && body
    ? { headers: { 'content-type': file.contentType, 'cache-control': STATIC_CACHE_CONTROL }, body }
    : from.cache?.get(staticCacheKey(rest, acceptsGzip(request.headers['accept-encoding'])));
  if (!entry) return notFound(reply, 'This Spark static file is not available without signing in.');
  const headers = { ...entry.headers };
  forViewer(headers, from.sandboxed);
  reply.hijack();
  sendCached(reply.raw, request.method, { headers, body: entry.body });
  return reply;
}
