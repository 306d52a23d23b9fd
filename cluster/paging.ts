// Newest-first pages with an opaque cursor (the position after the last item), shared
// by both cluster implementations.
import type { AppRecord, ListQuery, Page } from './cluster.js';

const newestFirst = (a: AppRecord, b: AppRecord) =>
  b.createdAt.localeCompare(a.createdAt) || b.appName.localeCompare(a.appName);

export const encodeCursor = (r: AppRecord) => Buffer.from(JSON.stringify([r.createdAt, r.appName])).toString('base64url');

export function decodeCursor(cursor: string): [string, string] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'string')) return value as [string, string];
  } catch { /* falls through */ }
  throw new InvalidCursorError('the cursor is not one this service issued');
}

export class InvalidCursorError extends Error {}

/** Whether a record's appName, jobName or a label value contains `needle` (already lower-cased). */
export function searchMatches(record: AppRecord, needle: string): boolean {
  if (record.appName.toLowerCase().includes(needle) || record.jobName.toLowerCase().includes(needle)) return true;
  for (const key in record.labels) if (record.labels[key].toLowerCase().includes(needle)) return true;
  return false;
}

/** Whether a record passes a list query's filters (job, state, labels, search). */
export function matchesQuery(record: AppRecord, query: Omit<ListQuery, 'limit' | 'cursor'>): boolean {
  if (query.jobName && record.jobName !== query.jobName) return false;
  if (query.state && record.state !== query.state) return false;
  for (const key in query.labels) if (record.labels[key] !== query.labels[key]) return false;
  if (query.q && !searchMatches(record, query.q.toLowerCase())) return false;
  return true;
}

export function pageOf(records: AppRecord[], query: ListQuery): Page<AppRecord> {
  const sorted = [...records].sort(newestFirst);
  let start = 0;
  if (query.cursor) {
    const [createdAt, appName] = decodeCursor(query.cursor);
    const after = { createdAt, appName } as AppRecord;
    start = sorted.findIndex((r) => newestFirst(after, r) < 0);
    if (start < 0) start = sorted.length;
  }
  const items = sorted.slice(start, start + query.limit);
  const more = start + query.limit < sorted.length;
  return { items, next: more ? encodeCursor(items[items.length - 1]) : null };
}
