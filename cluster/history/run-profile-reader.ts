// Reads a run's event log into its profile (domain/run-profile.ts), streaming: one line at a
// time, only the events the profile counts are parsed, and a line longer than the cap (the
// environment's classpath is the longest Spark writes; anything past it is not one of ours)
// is skipped without being held. Memory stays the same whatever the log's size.
//
// Logs are read as the service has Spark write them: uncompressed (domain/event-log.ts sets
// no codec and spark.eventLog.compress is off by default). A log a template compressed
// (`.lz4`, `.lzf`, `.snappy`, `.zstd`) is not read: Node has none of those codecs built in.
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { type RunProfile, RunProfileBuilder } from '../../domain/run-profile.js';
import type { ObjectStore } from './object-store.js';

/** Lines longer than this are skipped (no event the profile reads comes near it). */
export const MAX_LINE_BYTES = 8 * 1024 * 1024;

const COUNTED = /^\{"Event":"SparkListener(?:ApplicationStart|ApplicationEnd|ExecutorAdded|ExecutorRemoved|TaskStart|TaskEnd|StageExecutorMetrics|ExecutorMetricsUpdate)"/;
const COMPRESSED = /\.(lz4|lzf|snappy|zstd)$/;

export class CompressedEventLogError extends Error {
  override name = 'CompressedEventLogError';
}

/** Feeds every counted event of `body` to `builder`, line by line. */
export async function feedEvents(body: Readable, builder: RunProfileBuilder, maxLineBytes = MAX_LINE_BYTES): Promise<void> {
  const utf8 = new StringDecoder('utf8');
  let pending = '';
  let skipping = false; // inside a line past the cap: dropped up to its end
  const take = (line: string) => {
    if (!COUNTED.test(line)) return;
    try { builder.add(JSON.parse(line) as Record<string, unknown>); } catch { /* a torn last line of a log still being written */ }
  };
  for await (const chunk of body) {
    let text = typeof chunk === 'string' ? chunk : utf8.write(chunk as Buffer);
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n')) {
      if (!skipping && pending.length + newline <= maxLineBytes) take(pending + text.slice(0, newline));
      pending = '';
      skipping = false;
      text = text.slice(newline + 1);
    }
    if (skipping) continue;
    pending += text;
    if (pending.length > maxLineBytes) { pending = ''; skipping = true; }
  }
  if (!skipping && pending) take(pending + utf8.end());
}

/** The files of a log entry in the order Spark wrote them: `events_<n>_<id>` by n, or the file itself. */
export async function eventFiles(dir: string, entry: string): Promise<string[]> {
  const path = join(dir, entry);
  if (!(await stat(path)).isDirectory()) return [path];
  return inWritingOrder(await readdir(path)).map((name) => join(path, name));
}

/** `events_<n>_…` files of a rolling log, by n; anything else (appstatus_…) is not events. */
function inWritingOrder(names: string[]): string[] {
  return names
    .map((name) => ({ name, n: /(?:^|\/)events_(\d+)_[^/]*$/.exec(name)?.[1] }))
    .filter((file): file is { name: string; n: string } => file.n !== undefined)
    .sort((a, b) => Number(a.n) - Number(b.n))
    .map((file) => file.name);
}

function refuseCompressed(files: string[]): void {
  const compressed = files.find((file) => COMPRESSED.test(file));
  if (compressed) throw new CompressedEventLogError(`event log ${compressed} is compressed; the service reads uncompressed logs only (unset spark.eventLog.compress)`);
}

/** The profile of the run logged at `dir/entry` (a rolling log's folder, or one file). */
export async function readRunProfile(dir: string, entry: string): Promise<RunProfile> {
  const files = await eventFiles(dir, entry);
  refuseCompressed(files);
  const builder = new RunProfileBuilder();
  for (const file of files) await feedEvents(createReadStream(file), builder);
  return builder.profile();
}

/**
 * The same from object storage (Kubernetes mode): `entry` under `prefix` in `store`'s bucket,
 * a rolling log's folder (`eventlog_v2_…/`) or one object, each object streamed as it is read.
 */
export async function readStoredRunProfile(store: Pick<ObjectStore, 'list' | 'read'>, prefix: string, entry: string): Promise<RunProfile> {
  const key = prefix ? `${prefix}/${entry}` : entry;
  let keys = [key];
  if (entry.startsWith('eventlog_v2_')) {
    const names: string[] = [];
    for await (const item of store.list(`${key}/`)) if ('key' in item) names.push(item.key);
    keys = inWritingOrder(names);
  }
  refuseCompressed(keys);
  const builder = new RunProfileBuilder();
  for (const object of keys) {
    const body = await store.read(object);
    if (body) await feedEvents(body, builder);
  }
  return builder.profile();
}
