// The order in which applications are listed and paged (newest first, then by name), kept apart
// from the cache that holds them (app-cache.ts): the cache's sorted index is searched with this,
// so a page of 100 out of 10,000 is a binary search and a short walk.

/** An application's place in the order: when it was created, and its name. */
export interface OrderKey { createdAt: string; name: string }

/** Newest first, then by name (descending), as pages are ordered. */
export const newestFirst = (a: OrderKey, b: OrderKey) => (a.createdAt === b.createdAt ? (a.name === b.name ? 0 : a.name > b.name ? -1 : 1) : a.createdAt > b.createdAt ? -1 : 1);

/** Where a key is or would go in a sorted index (binary search). */
export function positionIn(index: readonly OrderKey[], key: OrderKey): number {
  let low = 0;
  let high = index.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (newestFirst(index[mid], key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A resource's key in the order. */
export function orderKeyOf(resource: { metadata: { creationTimestamp?: string | Date; name: string } }): OrderKey {
  return { createdAt: new Date(resource.metadata.creationTimestamp ?? 0).toISOString(), name: resource.metadata.name };
}
