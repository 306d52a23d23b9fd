// What a Spark Connect client tells the endpoint in its gRPC metadata (HTTP/2 headers). The
// Python client turns `sc://host:port/;token=KEY;template=NAME` into `authorization: Bearer KEY`
// and a `template: NAME` header (every `;key=value` but its own becomes metadata); the JVM client
// sent the token as `authentication` until mid-2026, so both are read. pyspark 3.5's client
// sends a token over TLS only (4.x also in plaintext to `localhost`), so on loopback without TLS
// a 3.5 client names its key as the API's own header, `;x-api-key=KEY`, which it sends as metadata.
import type { IncomingHttpHeaders } from 'node:http2';

/** Metadata that is the endpoint's own: never passed on to the Spark Connect server (the key stays here). */
const ENDPOINT_METADATA = new Set(['authorization', 'authentication', 'template', 'x-api-key']);
/** HTTP/2 connection-level and hop-by-hop headers, set again on the upstream request. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'http2-settings']);

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** The key of a call (`authorization`'s bearer token, else `authentication`'s, else `x-api-key`); undefined without one. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  for (const name of ['authorization', 'authentication', 'x-api-key']) {
    const value = single(headers[name])?.trim();
    if (!value) continue;
    const match = /^bearer\s+(.+)$/i.exec(value);
    const token = (match ? match[1] : value).trim();
    if (token) return token;
  }
  return undefined;
}

/** Template names are the API's (a DNS label). */
const TEMPLATE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The template a call names (`;template=NAME` in the connection string); undefined: the default. Throws on a malformed name. */
export function templateOf(headers: IncomingHttpHeaders): string | undefined {
  const value = single(headers.template)?.trim();
  if (!value) return undefined;
  if (!TEMPLATE_NAME.test(value)) throw new Error(`metadata "template": ${JSON.stringify(value.slice(0, 80))} is not a template name (lower-case letters, digits and dashes)`);
  return value;
}

/** The call's headers as the Spark Connect server gets them: no pseudo-headers, no key, no hop-by-hop headers. */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const forwarded: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || ENDPOINT_METADATA.has(name) || HOP_BY_HOP.has(name)) continue;
    forwarded[name] = value;
  }
  return forwarded;
}
