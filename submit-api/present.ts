// The API's view of a record: the Application schema's fields and nothing else.
import type { AppRecord } from '../cluster/cluster.js';
import type { Application } from '../schemas/index.js';

export function toApplication(record: AppRecord): Application {
  const { appName, jobName, configTemplateName, labels, submittedBy, config, state, stateDetail, createdAt, startedAt, endedAt, runningExecutors, transitions } = record;
  return { appName, jobName, configTemplateName, labels, submittedBy, config, state, stateDetail, createdAt, startedAt, endedAt, runningExecutors, ...(transitions ? { transitions } : {}) };
}
