// The watch of every informer (informers.ts): client-node's Watch with the same contract (the
// same query, one callback per event line, `done` once: null when the apiserver ends the
// stream, the error otherwise; the returned controller aborts it), but the stream read as it
// comes. client-node 1.4 sends each watch through node-fetch, whose body is a PassThrough,
// and reads it with readline, whose string decoding and line regexp run over every chunk:
// on every submission's two watch events (its Application and its driver pod, 3-9 KB each)
// two more stream stages and a copy of the text before the parse (the service's CPU per
// submission, bench/kubernetes/controller-ceiling.ts). Here the response's own chunks are cut
// at newlines and each line decoded once, for its parse. The request goes on the module's
// kept-alive agent with its credentials and proxy (apiserver.ts), as the plain calls do.
import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import { Watch } from '@kubernetes/client-node';
import { parseApiJson } from './api-json.js';
import { connectionOf } from './apiserver.js';

/** The byte that ends every line of a watch stream ('\n'; a '\r' before it is JSON whitespace). */
const NEWLINE = 0x0a;
/**
 * The longest line read (bytes). An object the apiserver stores is at most about 1.5 MiB (etcd's
 * request limit), its watch event a little more: a longer line is not an event, and holding it
 * would let one stream take the process's memory. The stream is then ended with an error (the
 * informer lists and watches again).
 */
export const WATCH_LINE_CAP = 16 * 1024 * 1024;

/**
 * Calls `line` with each line of `stream` (a Buffer stream), decoded as UTF-8, without its
 * newline; a last line without one at the stream's end too. A newline byte never occurs inside
 * a multi-byte UTF-8 character, so a line is always decoded whole.
 */
export function eachLine(stream: Readable, line: (text: string) => void, cap = WATCH_LINE_CAP): void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** False once the stream was ended for a line over the cap. */
  const within = (bytes: number): boolean => {
    if (bytes <= cap) return true;
    pending = [];
    stream.destroy(new Error(`a watch event longer than ${cap} bytes`));
    return false;
  };
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      if (!within(pendingBytes + end - start)) return;
      if (pending.length === 0) {
        line(chunk.toString('utf8', start, end));
      } else {
        pending.push(chunk.subarray(start, end));
        const whole = Buffer.concat(pending);
        pending = [];
        pendingBytes = 0;
        line(whole.toString('utf8'));
      }
      start = end + 1;
    }
    if (start === chunk.length || !within(pendingBytes + chunk.length - start)) return;
    pending.push(chunk.subarray(start));
    pendingBytes += chunk.length - start;
  });
  stream.once('end', () => {
    if (pending.length > 0) line(Buffer.concat(pending).toString('utf8'));
    pending = [];
  });
}

export class LineWatch extends Watch {
  override async watch(...[path, queryParams, callback, done]: Parameters<Watch['watch']>): Promise<AbortController> {
    const controller = new AbortController();
    let finished = false;
    const finish = (error: unknown) => {
      if (finished) return;
      finished = true;
      controller.abort();
      done(error);
    };
    try {
      const res = await connectionOf(this.config).request({ method: 'GET', path: watchPath(path, queryParams), headers: { accept: 'application/json' }, signal: controller.signal });
      if (res.statusCode !== 200) {
        res.resume();
        const status = res.statusCode ?? 0;
        throw Object.assign(new Error(res.statusMessage || STATUS_CODES[status] || 'Internal Server Error'), { statusCode: status });
      }
      // As client-node does: a watch can be quiet for minutes; TCP keep-alive finds a dead peer.
      res.socket?.setKeepAlive(true, 30_000);
      res.once('error', finish);
      res.once('close', () => finish(null));
      eachLine(res, (line) => {
        try {
          // Without the object's managedFields, which nothing here reads (api-json.ts).
          const data = parseApiJson(line) as { type: string; object: unknown };
          callback(data.type, data.object, data);
        } catch {
          // client-node's contract: a line that does not parse, or a callback that throws, is skipped
        }
      });
    } catch (error) {
      finish(error);
    }
    return controller;
  }
}

/** `path` with `watch=true` and the defined query parameters, as client-node's Watch sends them. */
export function watchPath(path: string, queryParams: Record<string, string | number | boolean | undefined> | undefined): string {
  const url = new URL(path, 'http://apiserver');
  url.searchParams.set('watch', 'true');
  for (const [key, value] of Object.entries(queryParams ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
  return url.pathname + url.search;
}
