// Keys never reach the log: a client may put one in the query string (`?token=`, as Jupyter's
// clients do), and request URLs are logged. Query values under key-like names, and anything
// that looks like one of our keys, are replaced before a URL is written.
import type { FastifyRequest } from 'fastify';

const SECRET_PARAMS = /^(token|key|api[-_]?key|access[-_]?token|apikey|x-api-key|password|secret)$/i;
const OUR_KEYS = /ssk_[A-Za-z0-9_-]+/g;

export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url.replace(OUR_KEYS, 'ssk_[redacted]');
  const query = url.slice(at + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    let decoded = name;
    try { decoded = decodeURIComponent(name); } catch { /* keep the raw name */ }
    return eq >= 0 && SECRET_PARAMS.test(decoded) ? `${name}=[redacted]` : pair;
  }).join('&');
  return `${url.slice(0, at)}?${query}`.replace(OUR_KEYS, 'ssk_[redacted]');
}

/** pino serializers for fastify's request log lines. */
export const logSerializers = {
  req(request: FastifyRequest) {
    return {
      method: request.method,
      url: redactUrl(request.url),
      host: request.host,
      remoteAddress: request.ip,
      remotePort: request.socket?.remotePort,
    };
  },
};
