// The one write that makes an Application outlive its driver pod: the effective config
// admission put on the pod, and the annotations that say what it was submitted with (overrides,
// admission mark, sizing), copied onto the Application as a JSON patch. Pure; the controller
// (reconciler.ts) sends it.
import type { V1Pod } from '@kubernetes/client-node';
import { readConfig } from '../../domain/index.js';
import { submissionAnnotations } from '../submission-info.js';
import type { ApplicationResource } from './records.js';
import { pointerKey } from './json-call.js';

export type PatchOperation = { op: 'test' | 'add'; path: string; value: unknown };


/**
 * The patch, or undefined when the pod carries no config (it missed admission). Every
 * operation holds only for the Application as it was read: the same uid; annotations added
 * key by key, so those another writer keeps stay; and where there were none yet, the map is
 * made whole only if nothing changed since (a failed test is a conflict: the watch brings the
 * newer Application and the controller tries again).
 */
export function configCopyPatch(resource: ApplicationResource, pod: V1Pod): PatchOperation[] | undefined {
  const config = readConfig(pod);
  if (!config) return undefined;
  const copied = submissionAnnotations(pod);
  const operations: PatchOperation[] = [
    { op: 'test', path: '/metadata/uid', value: resource.metadata.uid },
    { op: 'add', path: '/spec/config', value: config },
  ];
  if (Object.keys(copied).length === 0) return operations;
  if (resource.metadata.annotations) {
    for (const [key, value] of Object.entries(copied)) operations.push({ op: 'add', path: `/metadata/annotations/${pointerKey(key)}`, value });
  } else {
    operations.push(
      { op: 'test', path: '/metadata/resourceVersion', value: resource.metadata.resourceVersion },
      { op: 'add', path: '/metadata/annotations', value: copied },
    );
  }
  return operations;
}
