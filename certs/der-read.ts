// Just enough DER reading to take an issuer's subject name and public key out of
// its certificate, byte for byte, so issued certificates chain to any CA we are given.

interface Element { tag: number; start: number; end: number; contentStart: number }

function element(buf: Buffer, start: number): Element {
  const tag = buf[start]!;
  let lengthByte = buf[start + 1]!;
  let offset = start + 2;
  let size = lengthByte;
  if (lengthByte & 0x80) {
    size = 0;
    for (lengthByte &= 0x7f; lengthByte > 0; lengthByte--) size = size * 256 + buf[offset++]!;
  }
  if (offset + size > buf.length) throw new Error('truncated DER');
  return { tag, start, end: offset + size, contentStart: offset };
}

/** The raw children (tag, length and content) of a constructed element. */
export function children(buf: Buffer): Buffer[] {
  const outer = element(buf, 0);
  const out: Buffer[] = [];
  for (let at = outer.contentStart; at < outer.end;) {
    const inner = element(buf, at);
    out.push(buf.subarray(inner.start, inner.end));
    at = inner.end;
  }
  return out;
}

/** Subject Name and SubjectPublicKeyInfo of a DER certificate. */
export function subjectAndKey(certDer: Buffer): { subject: Buffer; spki: Buffer } {
  const tbs = children(certDer)[0];
  if (!tbs) throw new Error('not a certificate');
  const fields = children(tbs);
  // With the [0] version field: version, serial, signature, issuer, validity, subject, spki.
  const base = fields[0]![0] === 0xa0 ? 1 : 0;
  const subject = fields[base + 4];
  const spki = fields[base + 5];
  if (!subject || !spki) throw new Error('not a certificate');
  return { subject, spki };
}
