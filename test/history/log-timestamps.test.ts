// Where a followed log goes on after a break (cluster/kubernetes/log-timestamps.ts): the times
// a kubelet puts before lines (timestamps=true) are taken off exactly, and a copy that ends at
// any byte of a log, read again from its mark's second (sinceTime) as a kubelet serves it, joins
// up with the rest: copy + what is kept = the log, whatever the chunks and however many lines share
// a time. The log on the test bed (FakeKubelet) is in test/history/log-follow.test.ts.
import t from 'tap';
import {
  type LineTime, type LogMark, Rejoin, formatLineTime, parseLineTime, sinceTimeOf, TimestampSplitter,
} from '../../cluster/kubernetes/log-timestamps.js';

interface Line { time: LineTime; text: string }

// Lines of several lengths (one long, one empty, the last without its newline), many sharing a time, over three seconds.
const base = Date.parse('2026-11-26T10:00:00Z') / 1000;
const lines: Line[] = [];
for (let n = 0; n < 40; n++) {
  const time = { seconds: base + Math.floor(n / 15), nanos: n % 15 < 6 ? 0 : n % 15 < 10 ? 500_000_000 : 700_000_001 };
  const text = n === 7 ? `${'long '.repeat(40)}\n` : n === 11 ? '\n' : n === 39 ? 'the last, without newline' : `line ${n} ${'x'.repeat(n % 5)}\n`;
  lines.push({ time, text });
}
const log = Buffer.from(lines.map((line) => line.text).join(''));
const starts = lines.reduce<number[]>((at, line, i) => [...at, i === 0 ? 0 : at[i - 1]! + Buffer.byteLength(lines[i - 1]!.text)], []);

/** As a kubelet serves the log: lines at or after `since` (seconds), each with its time before it. */
const served = (since?: number) => Buffer.from(lines.filter((line) => since === undefined || line.time.seconds >= since)
  .map((line) => `${formatLineTime(line.time)} ${line.text}`).join(''));

/** Cuts bytes into chunks of `size` (the last smaller). */
const chunks = (bytes: Buffer, size: number) => Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

/** The mark of a copy of the log's first `bytes` bytes, from the lines themselves. */
function markAt(bytes: number): LogMark {
  const last = starts.filter((start) => start < bytes).length - 1;
  const same = lines.slice(0, last + 1).filter((line) => line.time.seconds === lines[last]!.time.seconds && line.time.nanos === lines[last]!.time.nanos).length;
  return { time: lines[last]!.time, same, lineBytes: bytes - starts[last]! };
}

t.test('times read as the kubelet prints them', async (t) => {
  t.same(parseLineTime('2026-11-26T10:00:01.000000123Z'), { seconds: base + 1, nanos: 123 });
  t.same(parseLineTime('2026-11-26T12:00:01.5+02:00'), { seconds: base + 1, nanos: 500_000_000 }, 'an offset and a short fraction');
  t.equal(parseLineTime('line 12'), undefined);
  t.equal(formatLineTime({ seconds: base, nanos: 42 }), '2026-11-26T10:00:00.000000042Z');
  t.equal(sinceTimeOf({ seconds: base + 2, nanos: 999_999_999 }), '2026-11-26T10:00:02Z', 'sinceTime: the whole second');
});

t.test('the times come off exactly, in chunks of any size', async (t) => {
  for (const size of [1, 2, 7, 31, 36, 100, 4096]) {
    const splitter = new TimestampSplitter(false);
    const parts = chunks(served(), size).map((chunk) => splitter.feed(chunk));
    t.ok(Buffer.concat(parts.map((p) => p.content)).equals(log), `chunks of ${size}: the log byte for byte`);
    t.equal(parts.reduce((n, p) => n + p.starts.length, 0), lines.length, `chunks of ${size}: every line's start`);
    t.ok(parts.every((p) => p.starts.every((start) => start.at < p.content.length)), `chunks of ${size}: a start comes with its line's first byte`);
  }
  t.throws(() => new TimestampSplitter(false).feed(Buffer.from('no time here\n')), /without its time/, 'a line without a time is an error');
});

t.test('a copy ending at any byte joins up with the log read again from its second', async (t) => {
  let checked = 0;
  for (let copied = 1; copied < log.length; copied++) {
    const mark = markAt(copied);
    for (const size of [3, 64]) {
      const splitter = new TimestampSplitter(true);
      const rejoin = new Rejoin(mark);
      const kept: Buffer[] = [];
      const replayed: Buffer[] = [];
      for (const chunk of chunks(served(mark.time.seconds), size)) {
        const split = splitter.feed(chunk);
        const taken = rejoin.take(split.content, split.starts);
        kept.push(taken.content);
        replayed.push(taken.replayed);
      }
      const whole = Buffer.concat([log.subarray(0, copied), ...kept]);
      if (!whole.equals(log) || !Buffer.concat(replayed).equals(log.subarray(copied - mark.lineBytes, copied)) || !rejoin.joined) {
        t.fail(`a copy of ${copied} bytes, chunks of ${size}: not joined exactly`);
        return;
      }
      checked++;
    }
  }
  t.equal(checked, 2 * (log.length - 1), 'every end of a copy, two chunk sizes: copy + kept is the log, the dropped end is the copy\'s');
});

t.test('a log that no longer has the copy\'s end is a mismatch, not a silent gap', async (t) => {
  const mark = markAt(starts[20]! + 3);
  const gone = Buffer.from(lines.slice(25).map((line) => `${formatLineTime(line.time)} ${line.text}`).join('')); // rotated away
  const splitter = new TimestampSplitter(true);
  const split = splitter.feed(gone);
  t.throws(() => new Rejoin(mark).take(split.content, split.starts), { name: 'LogMismatch' });
  const fewer = { ...mark, same: mark.same + 1 }; // the copy has a line of that time the log has not
  const again = new TimestampSplitter(true).feed(served(mark.time.seconds));
  t.throws(() => new Rejoin(fewer).take(again.content, again.starts), { name: 'LogMismatch' });
});

t.test('a stream from sinceTime that begins inside an older line drops that line\'s end', async (t) => {
  const splitter = new TimestampSplitter(true);
  const split = splitter.feed(Buffer.from(`the end of an older line\n${formatLineTime(lines[0]!.time)} ${lines[0]!.text}`));
  t.equal(split.content.toString(), lines[0]!.text);
  t.equal(split.starts.length, 1);
});
