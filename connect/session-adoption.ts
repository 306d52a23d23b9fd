// A session this endpoint does not hold may run already, started through another replica of the
// API (Kubernetes mode: a client whose connection now lands on this replica, or whose replica
// died). Its application carries the session id as a label: the caller gets it back only as its
// owner, with the same template, as on the replica that started it (refused before any side
// effect otherwise); an ended one is refused as ended, never started again.
import type { FastifyBaseLogger } from 'fastify';
import { GrpcRefusal, GrpcStatus } from './grpc-status.js';
import type { ServerPlacement } from './placement.js';
import { serverPortOf, templateOf } from './server-app.js';
import { isEnded, waitForServer } from './server-wait.js';
import type { ConnectApp, ServiceApi } from './service-api.js';
import { type ConnectSession, type Ended, endedMessage } from './session.js';
import { sessionRefusal } from './session-owners.js';

export interface Adoption {
  api: ServiceApi;
  /** Every application of the id, whoever's (the service's own read). */
  sessionClaims: (sessionId: string) => Promise<ConnectApp[]>;
  placement: ServerPlacement;
  log: FastifyBaseLogger;
  probeMs?: number;
  stopping: () => boolean;
  /** The id is over: later calls are refused as ended. */
  remember: (sessionId: string, ended: Ended) => void;
  /** Writes the session's activity at once (the replica that started it then sees it in use). */
  touch: (session: ConnectSession) => void;
}

/** Newest first; the same order on every replica, also for two made in one second (the apiserver's resolution). */
const sortedNewestFirst = (apps: ConnectApp[]): ConnectApp[] =>
  [...apps].sort((a, b) => (b.createdAt ?? '').localeCompare(a.createdAt ?? '') || b.appName.localeCompare(a.appName));

/** Takes the session's running application over (true), or finds none (false); throws a GrpcRefusal when the caller may not have it or it ended. */
export async function adoptSession(session: ConnectSession, adoption: Adoption): Promise<boolean> {
  const { api, sessionClaims } = adoption;
  const apps = sortedNewestFirst(await sessionClaims(session.sessionId));
  const caller = { id: session.owner, key: session.key };
  const owned = (app: ConnectApp) => ({ owner: app.submittedBy ?? null, template: templateOf(app) });
  // The session is the key's whose application first carried its id; any other key is refused.
  const first = apps.at(-1);
  const stranger = first && sessionRefusal(caller, session.sessionId, owned(first), undefined);
  if (stranger) throw stranger;
  // The caller's own (live before ended).
  const mine = apps.filter((app) => !sessionRefusal(caller, session.sessionId, owned(app), undefined));
  const found = mine.find((app) => !isEnded(app)) ?? mine[0];
  if (!found) return false;
  const refusal = sessionRefusal(caller, session.sessionId, owned(found), session.template);
  if (refusal) throw refusal;
  if (isEnded(found)) {
    const why = `its application ${found.appName} is ${found.state}`;
    adoption.remember(session.sessionId, { owner: session.owner, why });
    throw new GrpcRefusal(GrpcStatus.FAILED_PRECONDITION, endedMessage(session.sessionId, why));
  }
  const port = serverPortOf(found) ?? await adoption.placement.port();
  Object.assign(session, { appName: found.appName, port, template: templateOf(found) });
  adoption.log.info({ appName: found.appName, sessionId: session.sessionId }, 'Spark Connect session: started through another replica, taken over here');
  adoption.touch(session);
  session.server = await waitForServer({
    appName: found.appName, port, placement: adoption.placement, get: (name) => api.get(name, session.key),
    stopping: adoption.stopping, probeMs: adoption.probeMs, what: 'this Spark Connect session',
  });
  return true;
}
