// A minimal DER (ASN.1) encoder: just the types an X.509 certificate needs.
// Node's crypto signs and exports keys but cannot build certificates, and a
// webhook image should not need the openssl binary or a PKI library for that.

export type Der = Buffer;

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One TLV; `tag` is the full identifier octet. */
export function tlv(tag: number, content: Buffer): Der {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

export const sequence = (...items: Der[]): Der => tlv(0x30, Buffer.concat(items));
export const set = (...items: Der[]): Der => tlv(0x31, Buffer.concat(items));
export const octetString = (bytes: Buffer): Der => tlv(0x04, bytes);
export const utf8String = (text: string): Der => tlv(0x0c, Buffer.from(text, 'utf8'));
export const boolean = (value: boolean): Der => tlv(0x01, Buffer.from([value ? 0xff : 0]));
/** [n] EXPLICIT: wraps a complete element. */
export const explicit = (n: number, inner: Der): Der => tlv(0xa0 | n, inner);
/** [n] IMPLICIT primitive: replaces the tag of a primitive value's content. */
export const implicit = (n: number, content: Buffer): Der => tlv(0x80 | n, content);

/** A non-negative INTEGER from big-endian bytes: minimal, with a 0 byte when the top bit is set. */
export function unsignedInteger(bytes: Buffer): Der {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

export const smallInteger = (n: number): Der => unsignedInteger(Buffer.from([n]));

/** BIT STRING of whole bytes (signatures, key identifiers). */
export const bitString = (bytes: Buffer): Der => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));

/** BIT STRING of named bits (bit 0 first), trailing zero bits trimmed as DER requires. */
export function namedBits(bits: number[]): Der {
  const top = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(top / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  const unused = 7 - (top & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([unused]), bytes]));
}

export function oid(dotted: string): Der {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const arc of [first! * 40 + second!, ...rest]) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** RFC 5280: UTCTime through 2049, GeneralizedTime from 2050, seconds precision, UTC. */
export function time(date: Date): Der {
  const rest = `${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}${pad(date.getUTCHours())}`
    + `${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}Z`;
  const year = date.getUTCFullYear();
  return year < 2050
    ? tlv(0x17, Buffer.from(`${pad(year % 100)}${rest}`, 'ascii'))
    : tlv(0x18, Buffer.from(`${pad(year, 4)}${rest}`, 'ascii'));
}
