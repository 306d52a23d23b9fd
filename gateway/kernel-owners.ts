// Who may use which kernel. A kernel belongs to the key that started it (a warm pool's kernel to
// the key that claimed it); admins act on every kernel, as on every application (the API's
// policy, domain/policy.ts); with authentication off there are no owners. A kernel that
// is not the caller's does not exist for it (404, as an unknown id): ids stay unguessable and
// nobody learns whose kernels run. Every check runs before anything is done to the kernel.
import type { GatewayCaller } from './auth.js';

/** Kernels one key may hold at once when nothing else is configured (`--kernels-per-key`). */
export const DEFAULT_KERNELS_PER_KEY = 5;

export function mayUseKernel(caller: GatewayCaller, owner: string | undefined): boolean {
  return caller === null || caller.role === 'admin' || (owner !== undefined && owner === caller.id);
}

/**
 * Why a start would give `caller` more than `limit` kernels, or undefined when it may start one
 * (0: no limit; admins and authentication off: none). `held` counts its live kernels and the
 * starts under way. Answered 429 `{reason, message}`.
 */
export function kernelLimitRefusal(caller: GatewayCaller, held: number, limit: number): string | undefined {
  if (caller === null || caller.role === 'admin' || limit <= 0 || held < limit) return undefined;
  return `This key already has ${held} kernels (at most ${limit} at once): shut one down before starting another.`;
}
