// The secret of local mode's Spark Connect servers (a session's driver runs Spark's
// SparkConnectServer). Such a server listens on a port of this machine that every other local
// process could reach, so it asks each call for a pre-shared token (domain/connect-server-token.ts)
// that only this service knows: derived from the application's name under a key that lives in
// this process alone, so the driver's start and the Connect endpoint (connect/relay.ts) agree on
// it without storing or passing it around.
import { randomBytes } from 'node:crypto';
import { connectServerToken as tokenUnder } from '../../domain/connect-server-token.js';

export { CONNECT_SERVER_CLASS, CONNECT_SERVER_TOKEN_ENV } from '../../domain/connect-server-token.js';

/** New at each start of the service: its servers' tokens die with it (so do the endpoint's sessions). */
const KEY = randomBytes(32);

/** The token of the Connect server run by application `appName` (hex: a header value as it is). */
export const connectServerToken = (appName: string): string => tokenUnder(KEY, appName);
