// The logger local mode writes to: the service's own (pino, shared with fastify), so that
// background failures (a record that could not be written, a driver that could not start)
// land in the same log as the requests.
import { pino, type BaseLogger } from 'pino';

export type LocalLogger = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/** For callers that pass none (tests, tools): warnings and errors to stderr. */
export const defaultLocalLogger = (): LocalLogger => pino({ level: 'warn' }, pino.destination(2));
