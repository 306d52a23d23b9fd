// One structured log format for every process: pino, JSON lines. fastify's
// logger is pino already, and takes these same options. Credentials never reach a line:
// the headers that carry API keys are redacted wherever a request is serialized.
import pino, { type Logger, type LoggerOptions } from 'pino';

export type { Logger };

export const REDACTED_PATHS = [
  'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', 'headers.authorization', 'headers["x-api-key"]',
  'req.headers["x-submission-service-launcher-token"]', 'headers["x-submission-service-launcher-token"]',
  '*.key', '*.apiKey', '*.token',
];

/** Options for pino or for fastify's `logger`: level from LOG_LEVEL, secrets redacted. */
export function loggerOptions(name: string, level = process.env.LOG_LEVEL ?? 'info'): LoggerOptions {
  return { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
}

/** A process's logger (the webhook, `testbed up`); to stderr, so stdout stays for what a command prints. */
export function createLogger(name: string, destination: pino.DestinationStream = pino.destination(2)): Logger {
  return pino(loggerOptions(name), destination);
}
