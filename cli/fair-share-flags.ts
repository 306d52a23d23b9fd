// The per-key limits (submit-api/fair-share-limits.ts) from the command line and the node-pool
// file's `limits` section (the chart's `limits` values): a flag wins over the file, the file over
// the defaults.
import { defaultFairShare, type FairShareLimits } from '../submit-api/fair-share-limits.js';
import { readNodePools } from './config.js';

export const fairShareFlags = {
  'submissions-per-minute': { type: 'string' },
  'applications-per-key': { type: 'string' },
  'streams-per-key': { type: 'string' },
  'websockets-per-key': { type: 'string' },
} as const;

const fields: Record<keyof typeof fairShareFlags, keyof FairShareLimits> = {
  'submissions-per-minute': 'submissionsPerMinute',
  'applications-per-key': 'applicationsPerKey',
  'streams-per-key': 'streamsPerKey',
  'websockets-per-key': 'websocketsPerKey',
};

export function fairShareFrom(flags: Partial<Record<keyof typeof fairShareFlags, string>>, nodePoolsFile?: string): FairShareLimits {
  const file = nodePoolsFile ? readNodePools(nodePoolsFile).limits : undefined;
  const limits: FairShareLimits = { ...defaultFairShare, ...file };
  for (const [flag, field] of Object.entries(fields) as [keyof typeof fairShareFlags, keyof FairShareLimits][]) {
    const value = flags[flag];
    if (value === undefined) continue;
    if (!/^\d{1,9}$/.test(value)) throw new Error(`--${flag} takes a whole number (0: no limit), not ${JSON.stringify(value)}`);
    limits[field] = Number(value);
  }
  return limits;
}
