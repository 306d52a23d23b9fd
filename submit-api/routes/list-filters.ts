// The filters the list, the counts and the events stream share: `labelSelector=team=growth,tier=batch`
// (the equality subset of Kubernetes' label selectors) and the search `q`.
import { HttpError } from '../errors.js';

export const labelSelectorQuery = {
  type: 'string',
  maxLength: 2048,
  description: 'Comma-separated `key=value` pairs (`==` also accepted); every one must match the application\'s labels.',
} as const;

/** The search: bounded, as every string the API takes. */
export const searchQuery = {
  type: 'string', maxLength: 100,
  description: 'search: applications whose appName, jobName or a label value contains this text, ignoring case (at most 100 characters; empty: no search)',
} as const;

export function parseLabelSelector(selector: string | undefined): Record<string, string> | undefined {
  if (!selector) return undefined;
  const labels: Record<string, string> = {};
  for (const term of selector.split(',')) {
    const match = /^\s*([^=!\s]+)\s*==?\s*([^=,\s]*)\s*$/.exec(term);
    if (!match) throw new HttpError(400, `labelSelector term "${term}" is not key=value`, { field: 'labelSelector' });
    labels[match[1]] = match[2];
  }
  return labels;
}
