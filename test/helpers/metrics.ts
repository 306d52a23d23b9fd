// Reading a Prometheus exposition (what GET /metrics answers) in tests, and capturing a
// pino log as parsed lines.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** The sum of the samples of `name` whose labels include all of `labels`; 0 when none. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const own: Record<string, string> = {};
    for (const pair of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) own[pair[1]!] = pair[2]!;
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** Whether the exposition declares the series at all (a HELP line). */
export const declares = (text: string, name: string) => text.includes(`# HELP ${name} `);

export interface CapturedLog { logger: Logger; lines: Record<string, any>[] }

/** A real pino logger whose JSON lines are kept, parsed, for assertions. */
export function captureLog(level = 'info'): CapturedLog {
  const lines: Record<string, any>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}
