// Waiting for a Connect server that was just submitted: its port is tried until it answers, and
// its application is asked after each miss, so a driver that ended (failed, stopped, deleted)
// ends the wait with why instead of holding the caller forever.
import { GrpcRefusal, GrpcStatus } from './grpc-status.js';
import { listening, type ServerAddress, type ServerPlacement } from './placement.js';
import type { ConnectApp } from './service-api.js';

const TERMINAL = new Set(['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN']);

export const isEnded = (app: ConnectApp | undefined): boolean => !app || TERMINAL.has(app.state);

export interface ServerWait {
  appName: string;
  port: number;
  placement: ServerPlacement;
  /** The application as the waiter may read it; undefined when gone. */
  get: (appName: string) => Promise<ConnectApp | undefined>;
  /** True once the endpoint is shutting down: the wait ends. */
  stopping: () => boolean;
  /** How often the port is tried (ms). */
  probeMs?: number;
  /** What the server is, for the message ("this Spark Connect session", "a warm pool server"). */
  what: string;
}

/** Where the server answers, once it does; a GrpcRefusal when its application ended first or the endpoint stops. */
export async function waitForServer(wait: ServerWait): Promise<ServerAddress> {
  for (;;) {
    const address = await wait.placement.address(wait.appName, wait.port);
    if (address && await listening(address)) return address;
    const app = await wait.get(wait.appName);
    if (isEnded(app)) {
      throw new GrpcRefusal(GrpcStatus.FAILED_PRECONDITION, `the application ${wait.appName} of ${wait.what} ended ${app?.state ?? 'deleted'} before its server answered${app?.stateDetail ? `: ${app.stateDetail}` : ''} (its driver log: GET /api/apps/${wait.appName}/log)`);
    }
    if (wait.stopping()) throw new GrpcRefusal(GrpcStatus.UNAVAILABLE, 'the Spark Connect endpoint is shutting down');
    await new Promise((resolve) => setTimeout(resolve, wait.probeMs ?? 250));
  }
}
