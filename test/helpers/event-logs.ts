// Spark event logs as the History Server and the service read them, built in tests: the head
// Spark writes (the environment with the service's mark, then the application's start), as a
// rolling log's folder or a single file. A hostile driver writes the same shapes with other
// names and ids in them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP_NAME_PROPERTY } from '../../domain/index.js';

export interface LogHead {
  /** The `App ID` inside the log. */
  sparkAppId: string;
  /** The service's mark (APP_NAME_PROPERTY); absent: a run the service did not submit. */
  appName?: string;
  /** spark.app.name / App Name. */
  sparkAppName?: string;
}

/** The log's text: its first events, one JSON object a line. */
export function logText(head: LogHead): string {
  const properties = head.appName === undefined ? {} : { [APP_NAME_PROPERTY]: head.appName, 'spark.app.name': head.sparkAppName ?? head.appName };
  const lines = [
    { Event: 'SparkListenerLogStart', 'Spark Version': '3.5.7' },
    { Event: 'SparkListenerResourceProfileAdded', 'Resource Profile Id': 0 },
    { Event: 'SparkListenerEnvironmentUpdate', 'Spark Properties': properties, 'System Properties': {}, 'Classpath Entries': {} },
    { Event: 'SparkListenerApplicationStart', 'App Name': head.sparkAppName ?? head.appName ?? 'app', 'App ID': head.sparkAppId, Timestamp: 1, User: 'spark' },
  ];
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

/** A rolling log's folder `eventlog_v2_<named>` (named after `named`, which a forged log need not hold); closed unless `inProgress`. */
export function writeRollingLog(dir: string, named: string, head: LogHead, inProgress = false): string {
  const folder = join(dir, `eventlog_v2_${named}`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, `events_1_${named}`), logText(head));
  writeFileSync(join(folder, `appstatus_${named}${inProgress ? '.inprogress' : ''}`), '');
  return folder;
}

/** A single-file log named `entry` (`<id>` or `<id>.inprogress`). */
export function writeSingleLog(dir: string, entry: string, head: LogHead): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, entry);
  writeFileSync(file, logText(head));
  return file;
}
