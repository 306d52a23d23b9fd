// Where a followed log goes on after a break (log-follower.ts). The kubelet's log API has no byte
// offset; it has `timestamps=true` (each line starts with its time, RFC3339 with nanoseconds, and
// a space) and `sinceTime` (RFC3339, whole seconds: lines of that second on). So a position in a
// log is "the last line the copy has started: its time, how many lines of that very time the copy
// has (lines can share a time), and how many of its bytes the copy has". A reader that comes back
// asks for `sinceTime=<that second>`, drops what the copy has, checks that the copy's last bytes
// are what the log has there, and keeps the rest with the times taken off: the archive stays the
// container's log byte for byte. Pure functions and small state machines, no I/O.

/** A line's time: whole seconds since the epoch and nanoseconds (the kubelet prints 9 digits). */
export interface LineTime { seconds: number; nanos: number }

/** A line that starts in a chunk of content: its offset there and its time. */
export interface LineStart { at: number; time: LineTime }

/** The copy's position in the log (see the file's comment). */
export interface LogMark { time: LineTime; same: number; lineBytes: number }

/** The log no longer has what the copy ends with (rotated, or a container's new run). */
export class LogMismatch extends Error {
  override name = 'LogMismatch';
}

const TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;
/** The longest prefix a line's time can be ("2006-01-02T15:04:05.999999999-07:00"). */
const MAX_TIME_BYTES = 35;

export function parseLineTime(text: string): LineTime | undefined {
  const match = TIME.exec(text);
  if (!match) return undefined;
  const ms = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(ms)) return undefined;
  return { seconds: ms / 1000, nanos: Number((match[2] ?? '').padEnd(9, '0')) };
}

export const compareLineTimes = (a: LineTime, b: LineTime): number => a.seconds - b.seconds || a.nanos - b.nanos;

/** RFC3339 in UTC with 9 digits, as the kubelet prints it (and as the follow state keeps it). */
export const formatLineTime = (time: LineTime): string =>
  new Date(time.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, `.${String(time.nanos).padStart(9, '0')}Z`);

/** `sinceTime` for a mark: its whole second (the API takes no fraction), so the mark's line comes again. */
export const sinceTimeOf = (time: LineTime): string => new Date(time.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Takes the times off a `timestamps=true` stream: chunk in, the log's own bytes out with where
 * each line starts and its time. A time may be cut across chunks. A stream read from `sinceTime`
 * may begin inside a line older than that second (the kubelet stamps only a line's start): those
 * bytes are dropped, as the line is older than any mark.
 */
export class TimestampSplitter {
  /** 'time': a line's time is being read; 'line': its bytes; 'drop': the end of a line older than sinceTime. */
  private state: 'time' | 'line' | 'drop' = 'time';
  private pending = Buffer.alloc(0);
  private first = true;
  /** The time of the line being read, until its first byte comes (a start always has a byte after it). */
  private startTime?: LineTime;
  /** The last time's whole seconds and zone as printed, and their value: lines of one second parse once. */
  private secondsKey = Buffer.alloc(0);
  private seconds = 0;

  constructor(private readonly fromSinceTime: boolean) {}

  feed(chunk: Buffer): { content: Buffer; starts: LineStart[] } {
    // Every line is copied once into `out` (a log has a line of ~100 bytes: no object per line but its start).
    const out = Buffer.allocUnsafe(chunk.length);
    const starts: LineStart[] = [];
    let length = 0;
    let i = 0;
    while (i < chunk.length) {
      const newline = chunk.indexOf(0x0a, i);
      if (this.state === 'drop') {
        if (newline < 0) break;
        i = newline + 1;
        this.state = 'time';
        continue;
      }
      if (this.state === 'line') {
        const end = newline < 0 ? chunk.length : newline + 1;
        if (this.startTime) { starts.push({ at: length, time: this.startTime }); this.startTime = undefined; }
        length += chunk.copy(out, length, i, end);
        i = end;
        if (newline >= 0) this.state = 'time';
        continue;
      }
      const space = chunk.indexOf(0x20, i);
      const stop = space < 0 ? chunk.length : space;
      const readable = this.pending.length + (stop - i) <= MAX_TIME_BYTES && (newline < 0 || newline > stop);
      if (readable && space < 0) { // the time goes on in the next chunk
        this.pending = Buffer.concat([this.pending, chunk.subarray(i)]);
        break;
      }
      let time: LineTime | undefined;
      if (readable && this.pending.length === 0) time = this.parse(chunk, i, stop);
      else if (readable) { const whole = Buffer.concat([this.pending, chunk.subarray(i, stop)]); time = this.parse(whole, 0, whole.length); }
      this.pending = Buffer.alloc(0);
      const first = this.first;
      this.first = false;
      if (time) {
        this.startTime = time;
        this.state = 'line';
        i = stop + 1;
      } else if (first && this.fromSinceTime) {
        this.state = 'drop';
      } else {
        throw new Error('a log line without its time: the kubelet did not honour timestamps=true');
      }
    }
    return { content: out.subarray(0, length), starts };
  }

  /** parseLineTime of bytes[from, to), reading the digits of the fraction itself and the rest once per second. */
  private parse(bytes: Buffer, from: number, to: number): LineTime | undefined {
    if (to - from < 20) return undefined;
    let at = from + 19;
    let nanos = 0;
    if (bytes[at] === 0x2e) {
      let digits = 0;
      for (at++; at < to && digits < 9 && bytes[at]! >= 0x30 && bytes[at]! <= 0x39; at++, digits++) nanos = nanos * 10 + bytes[at]! - 0x30;
      if (digits === 0) return undefined;
      for (; digits < 9; digits++) nanos *= 10;
    }
    const key = this.secondsKey;
    const zone = to - at;
    if (key.length !== 19 + zone || bytes.compare(key, 0, 19, from, from + 19) !== 0 || bytes.compare(key, 19, key.length, at, to) !== 0) {
      const fresh = Buffer.concat([bytes.subarray(from, from + 19), bytes.subarray(at, to)]);
      const parsed = parseLineTime(fresh.toString('latin1'));
      if (!parsed) return undefined;
      this.secondsKey = fresh;
      this.seconds = parsed.seconds;
    }
    return { seconds: this.seconds, nanos };
  }
}

/**
 * Drops what a copy has from a log read again from its mark's second: lines before the mark's
 * line, then the mark's line's first `lineBytes` (handed back as `replayed`, for the caller to
 * compare with its copy), and passes the rest. Without a mark everything passes.
 */
export class Rejoin {
  private phase: 'before' | 'join' | 'after';
  private seen = 0;
  private joinLeft = 0;

  constructor(private readonly mark: LogMark | undefined) {
    this.phase = mark ? 'before' : 'after';
  }

  get joined(): boolean {
    return this.phase === 'after';
  }

  take(content: Buffer, starts: LineStart[]): { content: Buffer; starts: LineStart[]; replayed: Buffer } {
    if (this.phase === 'after') return { content, starts, replayed: Buffer.alloc(0) };
    const mark = this.mark!;
    const replayed: Buffer[] = [];
    // Segment k is [start of line k-1 (0 for k = 0: the line going on from the last chunk), the next start).
    for (let k = 0; k <= starts.length; k++) {
      const from = k === 0 ? 0 : starts[k - 1]!.at;
      if (k > 0) {
        if (this.phase === 'join') throw new LogMismatch('the log\'s line at the copy\'s end is shorter than the copy\'s');
        const order = compareLineTimes(starts[k - 1]!.time, mark.time);
        if (order > 0) throw new LogMismatch(`the log has no line of ${formatLineTime(mark.time)} where the copy ends (rotated, or the container's new run)`);
        if (order === 0 && ++this.seen === mark.same) { this.phase = 'join'; this.joinLeft = mark.lineBytes; }
      }
      if (this.phase !== 'join') continue; // a line the copy has: dropped
      const to = k < starts.length ? starts[k]!.at : content.length;
      const n = Math.min(this.joinLeft, to - from);
      replayed.push(content.subarray(from, from + n));
      this.joinLeft -= n;
      if (this.joinLeft > 0) continue;
      this.phase = 'after';
      const cut = from + n;
      return { content: content.subarray(cut), starts: starts.slice(k).map((start) => ({ at: start.at - cut, time: start.time })), replayed: Buffer.concat(replayed) };
    }
    return { content: Buffer.alloc(0), starts: [], replayed: Buffer.concat(replayed) };
  }
}
