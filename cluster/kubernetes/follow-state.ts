// A followed log's state in the store, beside its archive (`<archive>.follow.json`), written each
// time a part has been sent: the unfinished upload, its parts, how many bytes of the log they
// hold, where in the log they end (log-timestamps.ts) and their last bytes. A new leader (or a
// restarted controller) goes on from there instead of reading the log again from its start.
// The archive's readers never see it (LogArchive.containers takes `<container>.log` only); it
// goes with the application's folder, and is removed when the upload completes or is given up.
import type { ObjectStore } from '../history/object-store.js';
import { formatLineTime, type LogMark, parseLineTime } from './log-timestamps.js';

export interface FollowState {
  /** The followed pod's uid: a state of another pod (the same name again) is not taken over. */
  pod: string;
  uploadId: string;
  parts: { part: number; etag: string }[];
  /** Bytes of the log in the parts. */
  bytes: number;
  mark?: LogMark;
  /** The parts' last bytes (the copy's tail: the rejoin and end checks compare with it). */
  tail: Buffer;
}

export const followStateKey = (archiveKey: string) => `${archiveKey}.follow.json`;

/** A state is a few numbers and the tail (64 KiB, base64): anything much larger is not one. */
const MAX_STATE_BYTES = 256 * 1024;

export async function writeFollowState(store: ObjectStore, archiveKey: string, state: FollowState): Promise<void> {
  const json = {
    pod: state.pod, uploadId: state.uploadId, parts: state.parts, bytes: state.bytes,
    mark: state.mark && { time: formatLineTime(state.mark.time), same: state.mark.same, lineBytes: state.mark.lineBytes },
    tail: state.tail.toString('base64'),
  };
  await store.put(followStateKey(archiveKey), Buffer.from(JSON.stringify(json)));
}

/** The state left for this archive; undefined when there is none or it does not read as one. */
export async function readFollowState(store: ObjectStore, archiveKey: string): Promise<FollowState | undefined> {
  const bytes = await store.readSmall(followStateKey(archiveKey), MAX_STATE_BYTES).catch(() => undefined);
  if (!bytes) return undefined;
  try {
    const json = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    const { pod, uploadId, parts, bytes: logBytes, mark, tail } = json;
    if (typeof pod !== 'string' || typeof uploadId !== 'string' || typeof tail !== 'string' || !Number.isSafeInteger(logBytes)) return undefined;
    if (!Array.isArray(parts) || !parts.every((p: { part?: unknown; etag?: unknown }) => Number.isSafeInteger(p?.part) && typeof p?.etag === 'string')) return undefined;
    let logMark: LogMark | undefined;
    if (mark !== undefined) {
      const { time, same, lineBytes } = mark as { time?: unknown; same?: unknown; lineBytes?: unknown };
      const parsed = typeof time === 'string' ? parseLineTime(time) : undefined;
      if (!parsed || !Number.isSafeInteger(same) || !Number.isSafeInteger(lineBytes)) return undefined;
      logMark = { time: parsed, same: same as number, lineBytes: lineBytes as number };
    }
    return { pod, uploadId, parts: parts as FollowState['parts'], bytes: logBytes as number, mark: logMark, tail: Buffer.from(tail, 'base64') };
  } catch {
    return undefined;
  }
}

export async function removeFollowState(store: ObjectStore, archiveKey: string): Promise<void> {
  await store.remove(followStateKey(archiveKey)).catch(() => undefined);
}
