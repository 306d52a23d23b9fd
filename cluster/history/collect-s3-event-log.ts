// Moves an ended driver's event log from its own folder (`<incoming>/<appName>/`, the only place
// its key reaches) into the History Server's directory: object storage's counterpart of local
// mode's sandbox collection (cluster/local/sandbox-event-log.ts). What the driver left is
// untrusted: an entry moves only when it is a log Spark names (`eventlog_v2_<id>/` of plain
// files, or one file `<id>`), its head names this application and the id its name says, and no
// entry of that name is in the directory yet. Anything else is refused, reported, and deleted
// with the folder.
import { countRefusedLog } from './run-claims.js';
import { firstEventFileName, identityFromHead, sparkAppIdOfEntry } from './event-log-head.js';
import type { ObjectStore } from './object-store.js';

export interface CollectTarget {
  /** The driver's folder (key prefix, no trailing slash). */
  from: string;
  /** The History Server's directory (key prefix, no trailing slash; may be empty). */
  to: string;
  appName: string;
}

/** The folder's objects by entry: a rolling log's folder and its files, or one file (file ''). */
async function entriesOf(store: ObjectStore, from: string): Promise<Map<string, string[]>> {
  const entries = new Map<string, string[]>();
  for await (const item of store.list(`${from}/`)) {
    if (!('key' in item)) continue;
    const parts = item.key.slice(from.length + 1).split('/');
    const [entry, file, ...deeper] = parts;
    if (!entry) continue;
    const files = entries.get(entry) ?? [];
    // A directory marker (`entry/`) is kept out; anything deeper makes the entry unplaceable.
    if (deeper.length > 0) files.push('\0');
    else if (file !== '') files.push(file ?? '');
    entries.set(entry, files);
  }
  return entries;
}

/** Why an entry may not move; undefined when it may. */
async function refusal(store: ObjectStore, target: CollectTarget, entry: string, files: string[]): Promise<string | undefined> {
  const id = sparkAppIdOfEntry(entry);
  if (!id || entry.endsWith('.inprogress')) return 'not a finished event log Spark names';
  const rolling = entry.startsWith('eventlog_v2_');
  if (rolling ? files.some((f) => f === '' || f === '\0') : files.length !== 1 || files[0] !== '') return 'not a log of plain files';
  const head = await store.read(`${target.from}/${entry}${rolling ? `/${firstEventFileName(id)}` : ''}`);
  if (!head) return 'its first event file is missing';
  const reading = await identityFromHead(head);
  if (!reading.identity) return 'its head names no run';
  if (reading.identity.sparkAppId !== id) return `its head says run ${reading.identity.sparkAppId}, its name ${id}`;
  if (reading.identity.appName !== target.appName) return `its head names application ${reading.identity.appName ?? '(none)'}`;
  const base = target.to ? `${target.to}/` : '';
  for await (const _ of store.list(`${base}${entry}`, false)) return 'an entry of that name is in the history already';
  return undefined;
}

/** Moves what may move; the entries moved. The folder is left for the caller to delete. */
export async function collectS3EventLogs(store: ObjectStore, target: CollectTarget, warn: (entry: string, why: string) => void): Promise<string[]> {
  const moved: string[] = [];
  const base = target.to ? `${target.to}/` : '';
  for (const [entry, files] of await entriesOf(store, target.from)) {
    const why = await refusal(store, target, entry, files).catch((error: Error) => error.message);
    if (why) {
      countRefusedLog('s3');
      warn(entry, why);
      continue;
    }
    const rolling = entry.startsWith('eventlog_v2_');
    // The head first and the status file last: the index never sees a closed log without its head.
    const rank = (file: string) => (file.startsWith('events_1_') ? 0 : file.startsWith('appstatus_') ? 2 : 1);
    const ordered = rolling ? [...files].sort((a, b) => rank(a) - rank(b)) : [''];
    for (const file of ordered) {
      const suffix = file ? `/${file}` : '';
      await store.copy(`${target.from}/${entry}${suffix}`, `${base}${entry}${suffix}`);
    }
    moved.push(entry);
  }
  return moved;
}
