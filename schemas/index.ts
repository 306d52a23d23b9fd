// The JSON Schemas of schemas/*.json: one source of truth for route validation,
// serialization, the OpenAPI document, generated TS types and the CRD.
import applicationAttempt from './application-attempt.json' with { type: 'json' };
import applicationConfig from './application-config.json' with { type: 'json' };
import applicationList from './application-list.json' with { type: 'json' };
import applicationState from './application-state.json' with { type: 'json' };
import application from './application.json' with { type: 'json' };
import configTemplateList from './config-template-list.json' with { type: 'json' };
import configTemplate from './config-template.json' with { type: 'json' };
import error from './error.json' with { type: 'json' };
import labels from './labels.json' with { type: 'json' };
import nodePool from './node-pool.json' with { type: 'json' };
import nodePoolsFile from './node-pools-file.json' with { type: 'json' };
import podConfig from './pod-config.json' with { type: 'json' };
import scheduleList from './schedule-list.json' with { type: 'json' };
import scheduleRecord from './schedule-record.json' with { type: 'json' };
import schedule from './schedule.json' with { type: 'json' };
import secretMount from './secret-mount.json' with { type: 'json' };
import sizingRules from './sizing-rules.json' with { type: 'json' };
import submission from './submission.json' with { type: 'json' };
import unschedulableError from './unschedulable-error.json' with { type: 'json' };
import unschedulablePod from './unschedulable-pod.json' with { type: 'json' };

export type JsonSchema = { $id: string; title?: string; [key: string]: unknown };

/** Every schema, in an order where each one's references come first. */
export const allSchemas: JsonSchema[] = [
  secretMount, podConfig, applicationConfig, applicationState, applicationAttempt, labels, application, applicationList,
  submission, configTemplate, configTemplateList, error, nodePool, sizingRules, nodePoolsFile,
  unschedulablePod, unschedulableError, schedule, scheduleRecord, scheduleList,
];

export const schemaIds = {
  application: application.$id,
  applicationConfig: applicationConfig.$id,
  applicationList: applicationList.$id,
  applicationState: applicationState.$id,
  configTemplate: configTemplate.$id,
  configTemplateList: configTemplateList.$id,
  error: error.$id,
  labels: labels.$id,
  nodePoolsFile: nodePoolsFile.$id,
  schedule: schedule.$id,
  scheduleList: scheduleList.$id,
  scheduleRecord: scheduleRecord.$id,
  submission: submission.$id,
  unschedulableError: unschedulableError.$id,
} as const;

/** A reference that fastify and the OpenAPI generator both resolve. */
export const ref = (id: string) => ({ $ref: `${id}#` });

export * from './types.generated.js';
