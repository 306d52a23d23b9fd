// The secret of local mode's Spark Connect servers (a session's driver runs Spark's
// SparkConnectServer). Such a server listens on a port of this machine that every other local
// process could reach, so it asks each call for a pre-shared token (Spark 4: `Authorization:
// Bearer TOKEN`, read from the driver's environment) that only this service knows: derived from
// the application's name under a key that lives in this process alone, so the driver's start
// and the Connect endpoint (connect/relay.ts) agree on it without storing or passing it around.
import { createHmac, randomBytes } from 'node:crypto';

/** Spark's Connect server main class: the drivers that get the token. */
export const CONNECT_SERVER_CLASS = 'org.apache.spark.sql.connect.service.SparkConnectServer';
/** The environment variable Spark 4's Connect server takes its token from (`spark.connect.authenticate.token` otherwise, which the API would show every key). */
export const CONNECT_SERVER_TOKEN_ENV = 'SPARK_CONNECT_AUTHENTICATE_TOKEN';

/** New at each start of the service: its servers' tokens die with it (so do the endpoint's sessions). */
const KEY = randomBytes(32);

/** The token of the Connect server run by application `appName` (hex: a header value as it is). */
export const connectServerToken = (appName: string): string => createHmac('sha256', KEY).update(appName).digest('hex');
