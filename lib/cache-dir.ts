import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where the project's builds are cached (scripts/setup.sh's `SUBMISSION_SERVICE_CACHE`). */
export const cacheDir = (): string => process.env.SUBMISSION_SERVICE_CACHE ?? join(homedir(), '.cache', 'submission-service');
