// The archive's size cap, shared by both ways a log reaches the archive (followed part by part
// in log-follower.ts, or read whole in log-archiver.ts): the first maxBytes bytes are kept, then
// one line saying the rest was cut.
import { Transform } from 'node:stream';

/** The line that ends an archive cut at the size cap. */
export const capMarker = (maxBytes: number) => `\n[log archive: cut at ${maxBytes} bytes; the rest of this log was not kept]\n`;

/** Passes the first `maxBytes` bytes, then capMarker, and ignores the rest. */
export function capAt(maxBytes: number): Transform {
  let passed = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (passed >= maxBytes) { done(); return; }
      const room = maxBytes - passed;
      passed += chunk.length;
      if (chunk.length < room) { done(null, chunk); return; }
      this.push(chunk.subarray(0, room));
      done(null, Buffer.from(capMarker(maxBytes)));
    },
  });
}
