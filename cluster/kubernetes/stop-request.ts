// A stop in Kubernetes mode is a request in the Application's spec, written by whichever API
// replica got it; the controller carries it out and writes KILLED, with the request's reason as
// its stateDetail (records.ts stopDetail). The request and its reason are one JSON patch, made
// only on the Application as it was read (its resourceVersion): of two stops at once (two
// replicas' orphan sweeps, a user's stop and an idle culling), one writes, and the other,
// whose test fails, reads the Application again and finds the request there. So the reason is
// written once and a later stop never replaces it. Pure but for the two calls it is given.
import { STOP_REASON_MAX_LENGTH } from '../../schemas/crd.js';
import { ConflictError } from '../cluster.js';
import type { PatchOperation } from './config-copy.js';
import { KubernetesError } from './errors.js';
import type { ApplicationResource } from './records.js';

/** Writes tried before giving up: each failed one means the Application changed meanwhile (a label, its status). */
const STOP_TRIES = 4;

/** `why` cut to the CRD's bound (the service's reasons are a sentence; one quoting an error message may be longer). */
export function boundedReason(why: string): string {
  return why.length <= STOP_REASON_MAX_LENGTH ? why : `${why.slice(0, STOP_REASON_MAX_LENGTH - 1)}…`;
}

/** The request on `resource` as read: the stop, and its reason when there is one (none: a user's stop). */
export function stopRequestPatch(resource: ApplicationResource, why?: string): PatchOperation[] {
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: resource.metadata.resourceVersion },
    { op: 'add', path: '/spec/stopRequested', value: true },
    ...(why ? [{ op: 'add', path: '/spec/stopReason', value: boundedReason(why) } as const] : []),
  ];
}

export interface StopRequestCalls {
  /** The Application as the apiserver has it now; undefined when it is gone. */
  read(): Promise<ApplicationResource | undefined>;
  /** Sends the patch (errors translated: errors.ts); undefined when the Application is gone. */
  patch(operations: PatchOperation[]): Promise<unknown>;
}

/** A write's error that says the Application changed since it was read: its failed test (422), or a conflict. */
const changedSinceRead = (error: unknown) => error instanceof ConflictError || (error instanceof KubernetesError && error.statusCode === 422);

/**
 * Writes the stop request unless one is there already. `cached`: the Application as this
 * replica's cache has it (usually current: no read first). False when the Application is gone.
 */
export async function requestStop(cached: ApplicationResource | undefined, why: string | undefined, calls: StopRequestCalls): Promise<boolean> {
  let resource = cached ?? await calls.read();
  for (let tries = 1; ; tries++) {
    if (!resource) return false;
    if (resource.spec.stopRequested) return true;
    try {
      return await calls.patch(stopRequestPatch(resource, why)) !== undefined;
    } catch (error) {
      if (tries >= STOP_TRIES || !changedSinceRead(error)) throw error;
    }
    resource = await calls.read();
  }
}
