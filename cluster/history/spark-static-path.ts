// Which request paths name one of Spark's static files (its UI's scripts, styles, images): a
// plain path below `/static/`, no `..`, no encoded characters. One rule for the Spark UI proxy's
// cookieless answers (dashboard/spark-ui-access.ts) and the places those files come from
// (cluster/local/spark-static.ts, cluster/history/remote-spark-static.ts, spark-static-dir.ts);
// and reading one from a folder of them.
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';

export const SPARK_STATIC_PATH = /^\/static\/(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)*[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** One of Spark's static files as the proxy serves it. */
export interface SparkStaticFile {
  body: Buffer;
  contentType: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.gif': 'image/gif',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

/** The Content-Type of a static file by its extension (unknown: bytes, which nosniff keeps inert). */
export const staticContentType = (file: string): string => TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';

/**
 * The file a `/static/…` path names under `root`, or undefined when it is no plain path below it
 * (no `..`, no encoded characters, nothing outside `root`).
 */
export function staticFilePath(root: string, rest: string): string | undefined {
  if (!SPARK_STATIC_PATH.test(rest)) return undefined;
  const relative = rest.slice('/static/'.length);
  const base = resolve(root);
  const file = resolve(base, relative);
  return file.startsWith(`${base}${sep}`) ? file : undefined;
}

/** The file a `/static/…` path names under `root` (a folder of Spark's static files), or undefined. */
export async function readStaticFile(root: string, rest: string): Promise<SparkStaticFile | undefined> {
  const file = staticFilePath(root, rest);
  if (!file) return undefined;
  try {
    if (!(await stat(file)).isFile()) return undefined;
    return { body: await readFile(file), contentType: staticContentType(file) };
  } catch {
    return undefined;
  }
}
