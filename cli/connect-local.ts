// Local mode's Spark Connect endpoint (cli/connect-wiring.ts) over the local cluster itself. At
// start, and whether the endpoint serves or not: the Connect servers the last process left
// queued or running are stopped, so none of its JVMs runs on unowned (a SIGKILL or a crash skips
// the endpoint's own stop of its sessions and warm pool), and the sessions its records name are
// handed to the endpoint to refuse as ended (connect/last-run.ts).
import type { FastifyBaseLogger } from 'fastify';
import type { LocalCluster } from '../cluster/local/local-cluster.js';
import { type EndedSession, lastRunConnect, SERVICE_RESTARTED } from '../connect/last-run.js';
import { CONNECT_SESSION_LABEL } from '../connect/server-app.js';
import { connectServers, type ConnectEndpoint, type ConnectSettings, type ConnectWiring, sessionClaims, startConnectEndpoint, warmVia } from './connect-wiring.js';

/** Stops the last run's Connect servers (one process per data dir, its lock: every record is that run's or this one's). */
export async function endLastRunConnect(cluster: Pick<LocalCluster, 'list' | 'stop'>, log: FastifyBaseLogger): Promise<EndedSession[]> {
  const { items } = await cluster.list({ limit: Number.MAX_SAFE_INTEGER });
  const { toStop, ended } = lastRunConnect(items);
  const stops = await Promise.allSettled(toStop.map((appName) => cluster.stop(appName, SERVICE_RESTARTED)));
  stops.forEach((result, i) => {
    if (result.status === 'rejected') log.error({ err: result.reason, appName: toStop[i] }, 'could not stop a Spark Connect server of the last run');
  });
  if (toStop.length > 0) log.warn({ appNames: toStop }, 'stopped the Spark Connect servers the last run left (it had not stopped them: a crash or a kill)');
  return ended;
}

type LocalWiring = Omit<ConnectWiring, 'settings' | 'stopApp' | 'ended' | 'warm' | 'sessionClaims' | 'connectServers'>;

/** Ends what the last run left, then starts the endpoint (undefined: off, or its default port taken). */
export async function startLocalConnect(cluster: LocalCluster, host: string, settings: ConnectSettings | undefined, wiring: LocalWiring): Promise<ConnectEndpoint | undefined> {
  const ended = await endLastRunConnect(cluster, wiring.log);
  if (!settings) return undefined;
  // A warm server handed out is labelled with its session, as a cold one is (so its id ends at a restart too).
  const handedOut = (appName: string, sessionId: string) => cluster.setLabels(appName, { [CONNECT_SESSION_LABEL]: sessionId });
  return startConnectEndpoint(host, {
    ...wiring, settings, ended, stopApp: (appName, why) => cluster.stop(appName, why), warm: { via: { ...warmVia(cluster), handedOut } },
    // One process per data dir: a Connect server its endpoint does not hold is one it lost (a stop that failed).
    sessionClaims: sessionClaims(cluster), connectServers: connectServers(cluster),
  });
}
