// Local mode after a restart: the Spark Connect applications its last process left. The endpoint
// keeps its sessions in memory and a session's state (temp views, cache, configs) lives in its
// server's JVM, so a restarted endpoint cannot hand a session back as it was: every Connect
// server still queued or running (a crash leaves them, the warm pool's too) is stopped, and each
// session id the records name is remembered as ended, so that its client's next call is told so
// (FAILED_PRECONDITION "has ended", as after an idle stop) instead of a silently empty session
// starting under the same id. Pure: the wiring reads the records and stops what this names.
import { type AppRecord, isTerminal } from '../cluster/cluster.js';
import { CONNECT_SERVER_CLASS, CONNECT_SESSION_LABEL, WARM_SESSION } from './server-app.js';

/** A session the endpoint refuses as ended: its id, the key that had it (null with authentication off) and why. */
export interface EndedSession { sessionId: string; owner: string | null; why: string }

/** Why a Connect server of the last run is stopped now (its record's stateDetail, and its client's message). */
export const SERVICE_RESTARTED = 'the service restarted after a crash or a kill';

export interface LastRunConnect {
  /** Applications still PENDING or RUNNING: to stop, with SERVICE_RESTARTED as why. */
  toStop: string[];
  /** Session ids to refuse as ended, the newest application's end for each. */
  ended: EndedSession[];
}

const isConnectServer = (record: AppRecord) =>
  record.labels[CONNECT_SESSION_LABEL] !== undefined && record.config.mainClass === CONNECT_SERVER_CLASS;

/** Why a session whose application ended is over, as the client is told. */
const endOf = (record: AppRecord) => `its application ${record.appName} is ${record.state}${record.stateDetail ? `: ${record.stateDetail}` : ''}`;

/** What the last run's Connect applications call for, from all the records (any order). */
export function lastRunConnect(records: AppRecord[]): LastRunConnect {
  const servers = records.filter(isConnectServer).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const toStop = servers.filter((record) => !isTerminal(record.state)).map((record) => record.appName);
  const ended = new Map<string, EndedSession>();
  for (const record of servers) {
    const sessionId = record.labels[CONNECT_SESSION_LABEL]!;
    if (sessionId === WARM_SESSION) continue; // a pool's server: the session that took it is not recorded
    ended.set(sessionId, { sessionId, owner: record.submittedBy, why: isTerminal(record.state) ? endOf(record) : SERVICE_RESTARTED });
  }
  return { toStop, ended: [...ended.values()] };
}
