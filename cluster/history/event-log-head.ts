// Reads which application a Spark event log belongs to from its first lines: Spark writes the
// environment (with every Spark property, ours among them) and the application's start within
// the first few events, before any job runs. What a log says is the only name it goes by: the
// History Server serves a run by the `App ID` inside its log, whatever the file is called, so
// the service reads the same id (a file named after another run's id would otherwise pass for
// that run).
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { APP_NAME_PROPERTY } from '../../domain/index.js';

export interface RunIdentity {
  /** The log's own `App ID` (SparkListenerApplicationStart): the History Server's name for the run. */
  sparkAppId: string;
  /** Our appName (APP_NAME_PROPERTY), undefined for a run the service did not submit. */
  appName: string | undefined;
  /** The log's `App Name` (spark.app.name, which a program may change): for reports only. */
  sparkAppName: string | undefined;
}

/** The environment line carries the whole classpath: heads are read up to this many bytes, no more. */
export const HEAD_BYTES = 4 * 1024 * 1024;

const SPARK_APP_ID = /^[A-Za-z0-9_-]+$/;

/**
 * Spark's name for a log entry's app id: `eventlog_v2_<id>` (rolling) or `<id>[.inprogress]`
 * (one file). Only a name to compare with what the log says, never trusted on its own.
 */
export function sparkAppIdOfEntry(entry: string): string | undefined {
  if (entry.startsWith('.')) return undefined;
  const id = entry.startsWith('eventlog_v2_') ? entry.slice('eventlog_v2_'.length) : entry.replace(/\.inprogress$/, '');
  // A compressed single-file log (`<id>.lz4`, `.zstd`…) cannot be read line by line here.
  return SPARK_APP_ID.test(id) ? id : undefined;
}

/** The file of a rolling log that holds its head: `events_1_<id>`, uncompressed (the service enables no codec). */
export const firstEventFileName = (sparkAppId: string): string => `events_1_${sparkAppId}`;

/** Every entry name Spark gives a run's log in the directory: another log of that id would be served as this run. */
export const entryNamesOf = (sparkAppId: string): string[] => [`eventlog_v2_${sparkAppId}`, sparkAppId, `${sparkAppId}.inprogress`];

// Spark writes each event as compact JSON, "Event" first; the History Server lists a log by lines
// of exactly these prefixes (so a line written otherwise names no run to it, nor to the service).
const isIdentityEvent = (line: string) =>
  line.startsWith('{"Event":"SparkListenerEnvironmentUpdate"') || line.startsWith('{"Event":"SparkListenerApplicationStart"');

/**
 * The run's identity from the log's leading lines, once both the environment and the start
 * have been seen; undefined while they have not (read more lines, or give up at the cap).
 */
export function identityFromLines(lines: Iterable<string>): RunIdentity | undefined {
  let appName: string | undefined;
  let sawEnvironment = false;
  for (const line of lines) {
    if (!isIdentityEvent(line)) continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined; // a torn last line: the caller reads on or gives up
    }
    if (event.Event === 'SparkListenerEnvironmentUpdate') {
      const properties = event['Spark Properties'];
      const value = properties && typeof properties === 'object' ? (properties as Record<string, unknown>)[APP_NAME_PROPERTY] : undefined;
      appName = typeof value === 'string' ? value : undefined;
      sawEnvironment = true;
    } else if (sawEnvironment && typeof event['App ID'] === 'string' && SPARK_APP_ID.test(event['App ID'])) {
      const sparkAppName = typeof event['App Name'] === 'string' ? event['App Name'] : undefined;
      return { sparkAppId: event['App ID'], appName, sparkAppName };
    }
  }
  return undefined;
}

/** What reading a log's head found: its identity, or whether the cap was reached without one. */
export type HeadReading = { identity: RunIdentity } | { identity: undefined; pastCap: boolean };

/**
 * Reads a log's head from `body` up to `maxBytes` (however long its lines), then stops reading;
 * `body` is destroyed.
 */
export async function identityFromHead(body: Readable, maxBytes = HEAD_BYTES): Promise<HeadReading> {
  const events: string[] = [];
  let bytes = 0;
  let pending = ''; // at most maxBytes: the read stops there
  const utf8 = new StringDecoder('utf8'); // a character split between chunks stays whole
  try {
    for await (const chunk of body) {
      const text = typeof chunk === 'string' ? chunk : utf8.write(chunk as Buffer);
      bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : (chunk as Buffer).length;
      const lines = (pending + text).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!isIdentityEvent(line)) continue;
        events.push(line);
        const identity = identityFromLines(events);
        if (identity) return { identity };
      }
      if (bytes >= maxBytes) return { identity: undefined, pastCap: true };
    }
    return { identity: undefined, pastCap: false };
  } finally {
    body.destroy();
  }
}
