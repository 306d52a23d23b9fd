// Small HTTP helpers for the webhook transport: a capped body reader and JSON replies.
import type { IncomingMessage, ServerResponse } from 'node:http';

export type Body = { ok: true; text: string } | { ok: false; head: string; bytes: number };

/**
 * Reads the body up to `limit` bytes. Past the limit it keeps only the head (where the
 * uid is) and drains the rest, so the client still gets an answer instead of a reset.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= limit) chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve(bytes <= limit ? { ok: true, text } : { ok: false, head: text.slice(0, 4096), bytes });
    });
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}
