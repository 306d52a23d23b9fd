// One Spark Connect session as the endpoint holds it (connect/sessions.ts), and how a client is
// told it ended. Its own file so that what acts on a session (adoption, shared activity) needs
// nothing of the sessions' container.
import type { ServerAddress } from './placement.js';

export interface ConnectSession {
  sessionId: string;
  owner: string | null;
  /** The caller's key, for the API calls made on its behalf (submit, state, stop). */
  key: string | undefined;
  template: string | undefined;
  appName?: string;
  /** The port its server was told to listen on. */
  port?: number;
  /** Where the endpoint reaches its server, once it answered. */
  server?: ServerAddress;
  /** Its server came ready from the warm pool. */
  warm?: boolean;
  /** Resolves once the Connect server answers; rejects when the application could not start. */
  ready: Promise<void>;
  openCalls: number;
  lastActivity: number;
  /** When this replica last wrote its activity onto the application (shared activity only). */
  markedAt?: number;
}

/** Why a session is over, remembered so that a late call of its id is refused instead of starting it again. */
export interface Ended { owner: string | null; why: string; errorClass?: string }

export const endedMessage = (sessionId: string, why: string) =>
  `Spark Connect session ${sessionId} has ended (${why}); its temp views and cached data are gone: stop this SparkSession and build a new one`;
