// A driver's log within its cap (cluster/local/log-cap.ts) and the sizes of the caps' flags
// (cluster/local/work-dir-space.ts): pure, no process.
import t from 'tap';
import { HeadTailLog, tailBytesOf } from '../../cluster/local/log-cap.js';
import { parseByteSize } from '../../cluster/local/work-dir-space.js';

const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString();

t.test('under the cap a log passes whole, with nothing added', async (t) => {
  const log = new HeadTailLog(1024);
  t.equal(text([...log.push(Buffer.from('a'.repeat(500))), ...log.push(Buffer.from('b'.repeat(268))), ...log.end()]), 'a'.repeat(500) + 'b'.repeat(268));
});

t.test('over the cap: the head as it comes, a note, then the last bytes once the output ends', async (t) => {
  const cap = 1024;
  t.equal(tailBytesOf(cap), 256);
  const log = new HeadTailLog(cap);
  const live: Buffer[] = [];
  for (let i = 0; i < 100; i++) live.push(...log.push(Buffer.from(`${String(i).padStart(3, '0')}${'.'.repeat(96)}\n`)));
  const head = text(live);
  t.ok(head.startsWith('000'), 'the first line is kept');
  t.match(head, /this log reached its cap of 1 KiB; the rest is dropped but its last 256 bytes/);
  t.notMatch(head, /^099/m, 'the end is not written yet');
  const end = text(log.end());
  t.match(end, /^\n\[submission-service: 8976 bytes of this log were dropped; its last 256 bytes follow\]\n/);
  t.ok(end.endsWith(`099${'.'.repeat(96)}\n`), 'the last line is kept');
  const body = head.length + end.length;
  t.ok(body < cap + 400, `the cap plus two notes (${body} bytes for 10,000 written: 768 of head, 8,976 dropped, 256 of tail)`);
});

t.test('the tail of a large cap is at most 4 MiB', async (t) => {
  t.equal(tailBytesOf(64 * 1024 * 1024), 4 * 1024 * 1024);
});

t.test('sizes: units, 0 and off for none, anything else refused', async (t) => {
  t.equal(parseByteSize('64MiB', '--log-cap'), 64 * 1024 * 1024);
  t.equal(parseByteSize('1GiB', '--work-dir-cap'), 1024 ** 3);
  t.equal(parseByteSize('512KiB', '--log-cap'), 512 * 1024);
  t.equal(parseByteSize('1048576', '--log-cap'), 1048576);
  t.equal(parseByteSize('0', '--log-cap'), undefined);
  t.equal(parseByteSize('off', '--log-cap'), undefined);
  t.throws(() => parseByteSize('64MB', '--log-cap'), /--log-cap takes a size such as 64MiB/);
  t.throws(() => parseByteSize('-1', '--log-cap'), /--log-cap/);
});
