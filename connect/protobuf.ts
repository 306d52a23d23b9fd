// The little of protocol buffers and gRPC's framing that the warm pool's warm-up needs to speak
// Spark Connect itself (connect/warm-up.ts): a handful of small requests written, and the top
// level of the answers read. The service carries no gRPC or protobuf library for so little; the
// endpoint itself never decodes what it relays (session-id.ts reads one field of it).

/** A message as a list of fields: a number or boolean is a varint, a string or bytes is length-delimited, a list is a nested message. */
export type ProtoMessage = ReadonlyArray<readonly [field: number, value: ProtoValue]>;
export type ProtoValue = number | boolean | string | Uint8Array | ProtoMessage;

function varint(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`protobuf: ${value} is not a non-negative integer`);
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

const key = (field: number, wireType: number) => varint(field * 8 + wireType);

/** The protobuf encoding of `message` (fields in the order given; repeat a field for a repeated one). */
export function encodeMessage(message: ProtoMessage): Buffer {
  const parts: Buffer[] = [];
  for (const [field, value] of message) {
    if (typeof value === 'number' || typeof value === 'boolean') {
      parts.push(key(field, 0), varint(Number(value)));
      continue;
    }
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value instanceof Uint8Array ? Buffer.from(value) : encodeMessage(value);
    parts.push(key(field, 2), varint(bytes.length), bytes);
  }
  return Buffer.concat(parts);
}

/** One field read back: a varint's value, or a length-delimited field's bytes (fixed-width fields are skipped). */
export interface ProtoField { field: number; value: number | Uint8Array }

/** The top-level fields of an encoded message; throws on bytes that are not one. */
export function decodeFields(bytes: Uint8Array): ProtoField[] {
  const fields: ProtoField[] = [];
  let at = 0;
  const readVarint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (at >= bytes.length) throw new Error('protobuf: the message ends inside a varint');
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    throw new Error('protobuf: a varint longer than 64 bits');
  };
  while (at < bytes.length) {
    const tag = readVarint();
    const [field, wireType] = [Math.floor(tag / 8), tag % 8];
    if (wireType === 0) fields.push({ field, value: readVarint() });
    else if (wireType === 2) {
      const length = readVarint();
      if (at + length > bytes.length) throw new Error('protobuf: a field longer than its message');
      fields.push({ field, value: bytes.subarray(at, at + length) });
      at += length;
    } else if (wireType === 1 || wireType === 5) at += wireType === 1 ? 8 : 4;
    else throw new Error(`protobuf: wire type ${wireType} is not read here`);
  }
  if (at > bytes.length) throw new Error('protobuf: the message ends inside a field');
  return fields;
}

/** A message as gRPC sends it: not compressed, its length first (4 bytes, big-endian). */
export function grpcFrame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** The messages of a gRPC body (all of it, as received); throws on a compressed or cut one. */
export function grpcMessages(body: Uint8Array): Uint8Array[] {
  const messages: Uint8Array[] = [];
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  for (let at = 0; at < body.length;) {
    if (at + 5 > body.length) throw new Error('gRPC: the body ends inside a message prefix');
    if (body[at] !== 0) throw new Error('gRPC: a compressed message (none was asked for)');
    const end = at + 5 + view.getUint32(at + 1);
    if (end > body.length) throw new Error('gRPC: the body ends inside a message');
    messages.push(body.subarray(at + 5, end));
    at = end;
  }
  return messages;
}
