// Where a session's Connect server runs and how the endpoint reaches it. Local mode: a driver
// process on this machine, on a loopback port picked per session. Kubernetes mode: a driver pod,
// each with its own IP, so every server listens on Spark Connect's own port and the endpoint
// dials the pod once it runs. Either way the server asks every call for its own token
// (domain/connect-server-token.ts), which the placement knows how to compute.
import { connect as tcpConnect } from 'node:net';
import { freePort } from '../lib/free-port.js';
import { connectServerToken } from '../cluster/local/connect-server-token.js';

export interface ServerAddress { host: string; port: number }

export interface ServerPlacement {
  /** The port a new session's server is told to listen on (spark.connect.grpc.binding.port). */
  port(): Promise<number>;
  /** Where the server of `appName`, listening on `port`, is reached; undefined while that is not known yet (its pod not running). */
  address(appName: string, port: number): Promise<ServerAddress | undefined>;
  /** The address servers listen on (spark.connect.grpc.binding.address, Spark 4); undefined: every interface. */
  bindAddress?: string;
  /** The token the server of `appName` was given (sent on every call: relay.ts); undefined: its server got none. */
  token(appName: string): string | undefined;
}

/** Local mode: a free loopback port per session. */
export const loopbackPlacement: ServerPlacement = {
  port: freePort,
  address: (_appName, port) => Promise.resolve({ host: '127.0.0.1', port }),
  // Loopback only: the endpoint is the way in, never another host.
  bindAddress: '127.0.0.1',
  token: connectServerToken,
};

/**
 * Kubernetes mode: Spark Connect's port on the driver pod's IP (`podIp`: undefined until the pod
 * runs); `token`: what the cluster gave the server (KubernetesCluster.connectServerToken).
 */
export function podPlacement(connectPort: number, podIp: (appName: string) => Promise<string | undefined>, token: (appName: string) => string | undefined = () => undefined): ServerPlacement {
  return {
    token,
    port: () => Promise.resolve(connectPort),
    address: async (appName, port) => {
      const host = await podIp(appName);
      return host ? { host, port } : undefined;
    },
  };
}

/** `host:port` as a URL's authority (an IPv6 address in brackets). */
export const authorityOf = ({ host, port }: ServerAddress): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Whether something accepts connections at `address` (a silent address counts as no after `timeoutMs`). */
export const listening = (address: ServerAddress, timeoutMs = 3_000) => new Promise<boolean>((resolve) => {
  const socket = tcpConnect({ host: address.host, port: address.port, timeout: timeoutMs }, () => { socket.destroy(); resolve(true); });
  socket.once('timeout', () => { socket.destroy(); resolve(false); });
  socket.once('error', () => resolve(false));
});
