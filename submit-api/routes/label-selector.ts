// `labelSelector=team=growth,tier=batch`: the equality subset of Kubernetes' label selectors,
// for the list and the events stream.
import { HttpError } from '../errors.js';

export const labelSelectorQuery = {
  type: 'string',
  maxLength: 2048,
  description: 'Comma-separated `key=value` pairs (`==` also accepted); every one must match the application\'s labels.',
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
