// Event logs of sandboxed drivers. The shared event log directory lies in the data dir, which
// the sandbox hides: a driver that could write there could also read (or replace) every other
// run's log. So each driver writes into a `spark-events` folder of its own work dir (the one
// place it may write anyway), and once it has ended — bwrap's PID namespace ends every process
// of the sandbox with it, so nothing writes any more — the service moves the log into the
// shared directory. Binding only that app's folder writable into the sandbox would not do: the
// History Server reads one flat directory, so a per-app folder would have to be linked into it
// while the driver still owns it (and could swap its files for links to other runs' logs).
//
// What the driver left is untrusted: only Spark's own entries are moved (a rolling log's folder
// of plain files, or one plain file; no links, no subfolders), only when the log's head names
// this application (a driver could write a log claiming another app's name), is named after the
// run id it holds, and that id has no log in the history yet (a driver could claim another run's
// id: the History Server serves a run by that id alone, so the link would open the other run),
// nor, whatever the history holds yet, an id the service saw another run's driver start, nor
// another id than the one it saw this driver start (app-id-watch.ts).
import { chownSync, mkdirSync } from 'node:fs';
import { cp, lstat, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { firstEventFile, readIdentity } from '../history/event-log-index.js';
import { entryNamesOf, sparkAppIdOfEntry } from '../history/event-log-head.js';
import { countRefusedLog, type RecordedRuns, recordedRefusal } from '../history/run-claims.js';
import { type DriverSandbox, SANDBOX_WORK_DIR } from './sandbox.js';

/** The folder a sandboxed driver writes its event log into, as it sees it. */
export const SANDBOX_EVENT_LOG_DIR = `${SANDBOX_WORK_DIR}/spark-events`;

const EVENT_LOG_DIR_CONF = 'spark.eventLog.dir=';

/** The folder below a driver's real work dir that holds its event log. */
export const workEventLogDir = (workDir: string): string => join(workDir, 'spark-events');

/** `file:///a/`, `file:/a`, `/a` → `/a`; undefined for other schemes. */
function localDir(uri: string): string | undefined {
  const text = uri.trim();
  if (/^file:/i.test(text)) {
    try { return resolve(decodeURIComponent(new URL(text).pathname)); } catch { return undefined; }
  }
  return text.startsWith('/') ? resolve(text) : undefined;
}

/**
 * A `--conf` value of the driver's command line as the sandbox needs it: the service's event log
 * directory (admission's default) becomes the driver's own; any other value stays as written.
 */
export function sandboxedConf(conf: string, sandbox: DriverSandbox | undefined): string {
  if (!sandbox?.eventLogDir || !conf.startsWith(EVENT_LOG_DIR_CONF)) return conf;
  const dir = localDir(conf.slice(EVENT_LOG_DIR_CONF.length));
  return dir === resolve(sandbox.eventLogDir) ? `${EVENT_LOG_DIR_CONF}file://${SANDBOX_EVENT_LOG_DIR}` : conf;
}

/** Makes the driver's event log folder before it starts (Spark refuses a missing directory). */
export function prepareEventLogDir(sandbox: DriverSandbox, workDir: string): void {
  if (!sandbox.eventLogDir) return;
  const dir = workEventLogDir(workDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (sandbox.user) chownSync(dir, sandbox.user.uid, sandbox.user.gid);
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(() => true, () => false);
}

/** Why an entry the driver left is not moved, or undefined when it is Spark's log of this application. */
async function refusal(source: string, eventLogDir: string, entry: string, appName: string, recorded?: RecordedRuns): Promise<string | undefined> {
  if (!sparkAppIdOfEntry(entry)) return 'not an event log name';
  const path = join(source, entry);
  const info = await lstat(path);
  if (info.isDirectory()) {
    if (!entry.startsWith('eventlog_v2_')) return 'a folder that is not a rolling event log';
    for (const file of await readdir(path)) {
      if (!(await lstat(join(path, file))).isFile()) return `${file} is not a plain file`;
    }
  } else if (!info.isFile()) {
    return 'not a plain file';
  }
  const head = await firstEventFile(source, entry);
  const identity = head ? (await readIdentity(head)).identity : undefined;
  if (!identity) return 'its head names no run';
  if (identity.appName !== appName) return `its head names application ${identity.appName ?? '(none)'}, not ${appName}`;
  // The History Server serves a run by the id inside its log: the name must say the same, and no
  // log of that id may be in the history already (it is another run's: the same id, two runs).
  if (sparkAppIdOfEntry(entry) !== identity.sparkAppId) return `it is named after run ${sparkAppIdOfEntry(entry)} but says it is run ${identity.sparkAppId}`;
  for (const name of entryNamesOf(identity.sparkAppId)) {
    if (await exists(join(eventLogDir, name))) return `run ${identity.sparkAppId} has a log in the history already (${name}${await heldBy(eventLogDir, name)})`;
  }
  // A run still going has no log in the history yet: what the service saw says whose it is.
  return recordedRefusal(identity, recorded)?.reason;
}

/** `, application <name>'s`: whose the history's entry is, for the report. */
async function heldBy(eventLogDir: string, entry: string): Promise<string> {
  const head = await firstEventFile(eventLogDir, entry).catch(() => undefined);
  const owner = head ? (await readIdentity(head).catch(() => undefined))?.identity?.appName : undefined;
  return owner === undefined ? '' : `, application ${owner}'s`;
}

/**
 * Moves the event logs an ended sandboxed driver wrote into the service's directory; returns the
 * entries moved. What is refused stays in the work dir (deleted with the application).
 */
export async function collectEventLogs(
  workDir: string, eventLogDir: string, appName: string, warn: (entry: string, why: string) => void, recorded?: RecordedRuns,
): Promise<string[]> {
  const source = workEventLogDir(workDir);
  const entries = await readdir(source).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [] as string[];
    throw error;
  });
  const moved: string[] = [];
  for (const entry of entries) {
    const why = await refusal(source, eventLogDir, entry, appName, recorded).catch((error: Error) => error.message);
    if (why) {
      countRefusedLog('sandbox');
      warn(entry, why);
      continue;
    }
    const target = join(eventLogDir, entry);
    if (await exists(target)) { warn(entry, 'an entry of that name exists already'); continue; }
    try {
      await rename(join(source, entry), target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      // The work dir on another file system: copied whole (links were refused above), then removed.
      await cp(join(source, entry), target, { recursive: true, errorOnExist: true, force: false });
      await rm(join(source, entry), { recursive: true, force: true });
    }
    moved.push(entry);
  }
  return moved;
}
