// How long and how many: a client that sends its request slowly (or never finishes it) is cut
// off after requestTimeoutMs, idle keep-alive sockets after keepAliveTimeoutMs, connections
// beyond maxConnections are refused by the kernel's accept, and under overload (event loop
// lagging) requests get a quick 503 instead of a slow death. Long answers (followed logs,
// the event feed) are not limited: the timeouts count only until the request has arrived.
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { capConnectionsPerAddress, defaultPerAddress } from '../lib/address-cap.js';
import { connectionBudget, holdConnectionsBelowFdLimit } from '../lib/fd-limit.js';

export interface ApiLimits {
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** The headers must arrive within this (at most requestTimeoutMs). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** How often Node checks the two timeouts above: the precision of the cut. */
  checkIntervalMs: number;
  /** Open connections at most; more are closed at once. Never above the open-files budget (lib/fd-limit.ts). */
  maxConnections: number;
  /** Open connections one client address (an IPv6 /64) may hold; 0: no cap; undefined: lib/address-cap.ts's default from maxConnections. */
  connectionsPerAddress?: number;
  /** Event-loop delay above which requests are answered 503 (0: never). */
  maxEventLoopDelayMs: number;
}

export const defaultLimits: ApiLimits = {
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
  maxConnections: connectionBudget(),
  maxEventLoopDelayMs: 3_000,
};

/** The fastify constructor options that carry the limits to Node's HTTP server. */
export function serverLimitOptions(limits: ApiLimits): Partial<FastifyServerOptions> {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
  } as Partial<FastifyServerOptions>;
}

export async function installLimits(app: FastifyInstance, limits: ApiLimits): Promise<void> {
  holdConnectionsBelowFdLimit(app.server, app.log, limits.maxConnections);
  capConnectionsPerAddress(app.server, limits.connectionsPerAddress ?? defaultPerAddress(app.server.maxConnections));
  app.server.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  if (limits.maxEventLoopDelayMs > 0) {
    // The start is not load: compiling every route's schemas and reading the state back block
    // the loop before anyone is served, and on a busy machine long enough that the guard's
    // first samples (or none at all: an infinite delay) answered 503 to the first requests
    // after the ready line. So the guard acts only on samples whose whole interval began after
    // the server was ready: two intervals after it.
    let armedAt = Number.POSITIVE_INFINITY;
    app.addHook('onReady', async () => { armedAt = performance.now() + 2 * limits.maxEventLoopDelayMs; });
    await app.register(underPressure, {
      maxEventLoopDelay: limits.maxEventLoopDelayMs,
      pressureHandler: async () => {
        if (performance.now() < armedAt) return; // served: the measure is the start's
        throw Object.assign(new Error('the service is overloaded'), { code: 'FST_UNDER_PRESSURE', statusCode: 503 });
      },
      // The delay is the mean of the samples taken over one interval, and an interval without a
      // sample (the loop blocked through it: the first tick after a reset records nothing)
      // counts as an infinite delay. With the default 1 s interval a 1 s stall at the wrong
      // moment answered 503 for the next second; over an interval as long as the limit, only a
      // loop blocked for the whole limit does.
      sampleInterval: limits.maxEventLoopDelayMs,
      retryAfter: 5, // its error (FST_UNDER_PRESSURE) is answered by errors.ts
    });
  }
}
