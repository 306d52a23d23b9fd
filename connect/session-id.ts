// Every Spark Connect request message carries the client's session id as its field 1 (a string:
// ExecutePlanRequest, AnalyzePlanRequest, ConfigRequest, AddArtifactsRequest, InterruptRequest,
// Reattach/ReleaseExecuteRequest, ArtifactStatusesRequest, FetchErrorDetailsRequest). The
// endpoint reads it from the first message of a call, before it knows where to relay the call;
// the bytes are passed on untouched.

/** gRPC's message prefix: a compressed flag and a 4-byte big-endian length. */
const PREFIX = 5;
/** Read at most this much of a call before deciding (field 1 comes first; ids are UUIDs). */
export const SESSION_ID_PEEK_LIMIT = 64 * 1024;

export type SessionIdPeek = { kind: 'more' } | { kind: 'found'; sessionId: string } | { kind: 'invalid'; message: string };

interface Cursor { bytes: Uint8Array; at: number }

/** A varint at the cursor, or undefined when the bytes end first. */
function varint(cursor: Cursor): number | undefined {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (cursor.at >= cursor.bytes.length) return undefined;
    const byte = cursor.bytes[cursor.at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return value;
  }
  return Number.NaN;
}

/** Skips a field of wire type `type`; false when the bytes end first. */
function skip(cursor: Cursor, type: number): boolean | 'bad' {
  if (type === 0) return varint(cursor) === undefined ? false : true;
  if (type === 1 || type === 5) { cursor.at += type === 1 ? 8 : 4; return cursor.at <= cursor.bytes.length; }
  if (type === 2) {
    const length = varint(cursor);
    if (length === undefined) return false;
    cursor.at += length;
    return cursor.at <= cursor.bytes.length;
  }
  return 'bad';
}

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The session id in the first message of `bytes` (what arrived of the call so far). */
export function peekSessionId(bytes: Uint8Array): SessionIdPeek {
  if (bytes.length < PREFIX) return { kind: 'more' };
  if (bytes[0] !== 0) return { kind: 'invalid', message: 'compressed request messages are not accepted by this endpoint (send them uncompressed)' };
  const messageEnd = PREFIX + new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
  const cursor: Cursor = { bytes: bytes.subarray(0, Math.min(bytes.length, messageEnd)), at: PREFIX };
  const whole = bytes.length >= messageEnd;
  while (cursor.at < cursor.bytes.length) {
    const tag = varint(cursor);
    if (tag === undefined) break;
    if (Number.isNaN(tag)) return { kind: 'invalid', message: 'the request message is not a protocol buffer' };
    const [field, type] = [Math.floor(tag / 8), tag % 8];
    if (field === 1 && type === 2) {
      const length = varint(cursor);
      if (length === undefined || cursor.at + length > cursor.bytes.length) break;
      const sessionId = Buffer.from(cursor.bytes.subarray(cursor.at, cursor.at + length)).toString('utf8');
      if (!SESSION_ID.test(sessionId)) return { kind: 'invalid', message: 'session_id: not a session id (a UUID, as Spark Connect clients make)' };
      return { kind: 'found', sessionId };
    }
    const skipped = skip(cursor, type);
    if (skipped === 'bad') return { kind: 'invalid', message: 'the request message is not a protocol buffer' };
    if (!skipped) break;
  }
  if (whole) return { kind: 'invalid', message: 'session_id: the request has no session id (every Spark Connect request carries one)' };
  return bytes.length >= SESSION_ID_PEEK_LIMIT ? { kind: 'invalid', message: 'session_id: not found in the first 64 KiB of the request' } : { kind: 'more' };
}
