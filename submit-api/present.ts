// The API's view of a record: the Application schema's fields and nothing else.
import { Transform } from 'node:stream';
import type { AppRecord } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import type { JobProfiles } from '../cluster/job-profiles.js';
import application from '../schemas/application.json' with { type: 'json' };
import type { Application, ApplicationState } from '../schemas/index.js';
import { sparkUiView } from '../domain/index.js';

const { config: _config, transitions: _transitions, attempts: _attempts, ...summaryProperties } = application.properties;

/** The list's answer with view=summary: Application items without `config`, `transitions` and `attempts`. */
export const summaryListSchema = {
  title: 'ApplicationSummaryList',
  type: 'object', additionalProperties: false, required: ['items', 'next'],
  properties: {
    items: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['appName', 'jobName', 'configTemplateName'], properties: summaryProperties } },
    next: { type: ['string', 'null'] },
  },
} as const;

/**
 * `history`: where ended runs are kept, if anywhere (says whether the Spark UI link opens one).
 * `jobs`: the jobs' profiles, where an ended run's cost is (local mode).
 */
export function toApplication(record: AppRecord, history?: SparkHistory, jobs?: JobProfiles): Application {
  const { appName, jobName, configTemplateName, labels, submittedBy, config, state, stateDetail, createdAt, startedAt, endedAt, runningExecutors, transitions, attempts } = record;
  const sparkUi = sparkUiView(record, { available: history?.available(record) ?? false, retentionMs: history?.retentionMs });
  const attempt = record.attempt ?? 1;
  const cost = jobs?.costOf(appName);
  return {
    appName, jobName, configTemplateName, labels, submittedBy, config, state, stateDetail, attempt, createdAt, startedAt, endedAt, runningExecutors, sparkUi,
    ...(cost ? { cost } : {}), ...(transitions ? { transitions } : {}), ...(attempts ? { attempts } : {}),
  };
}

/** A list item without what only the application's own page shows (its config, its transitions, its attempts). */
export function toSummary(record: AppRecord, history?: SparkHistory, jobs?: JobProfiles): Omit<Application, 'config' | 'transitions' | 'attempts'> {
  const { config: _config, transitions: _transitions, attempts: _attempts, ...rest } = toApplication(record, history, jobs);
  return rest;
}

const STATES: ApplicationState[] = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'];
const stateCounts = { type: 'object', additionalProperties: false, properties: Object.fromEntries(STATES.map((s) => [s, { type: 'integer' }])) } as const;

export const countsSchema = {
  type: 'object', additionalProperties: false, required: ['total', 'byState', 'jobs'],
  properties: {
    total: { type: 'integer' },
    byState: stateCounts,
    jobs: {
      type: 'array', description: 'every job, by name',
      items: { type: 'object', additionalProperties: false, required: ['jobName', 'total', 'byState'], properties: { jobName: { type: 'string' }, total: { type: 'integer' }, byState: stateCounts } },
    },
  },
} as const;

type StateCounts = Record<ApplicationState, number>;
const zero = (): StateCounts => Object.fromEntries(STATES.map((s) => [s, 0])) as StateCounts;

/** Applications per state, in all and per job (jobs sorted by name). */
export function countStates(records: AppRecord[]) {
  const byState = zero();
  const jobs = new Map<string, { jobName: string; total: number; byState: StateCounts }>();
  for (const r of records) {
    byState[r.state] += 1;
    let job = jobs.get(r.jobName);
    if (!job) jobs.set(r.jobName, job = { jobName: r.jobName, total: 0, byState: zero() });
    job.total += 1;
    job.byState[r.state] += 1;
  }
  return { total: records.length, byState, jobs: [...jobs.values()].sort((a, b) => a.jobName.localeCompare(b.jobName)) };
}

/** Drops the first `count` bytes of a byte stream (a log read from an offset). */
export function skipBytes(count: number): Transform {
  let left = count;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (left >= chunk.length) { left -= chunk.length; return done(); }
      const rest = left > 0 ? chunk.subarray(left) : chunk;
      left = 0;
      done(null, rest);
    },
  });
}

const podSizing = {
  type: 'object', additionalProperties: false, required: ['pool', 'reasons'],
  properties: {
    pool: { type: ['string', 'null'] }, cores: { type: 'number' }, coreRequest: { type: 'string' }, memory: { type: 'string' },
    reasons: { type: 'array', items: { type: 'string' } },
  },
} as const;

/** Sizing from the job's past runs, as admission recorded it (domain/history-sizing.ts). */
const historySizing = {
  type: 'object', additionalProperties: false, required: ['mode', 'applied', 'asked', 'basedOn', 'reasons'],
  properties: {
    mode: { type: 'string', enum: ['off', 'recommend', 'apply'] },
    applied: { type: 'boolean' },
    asked: { type: 'object', additionalProperties: false, properties: { cores: { type: 'integer' }, memory: { type: 'string' }, instances: { type: 'integer' } } },
    basedOn: { type: 'array', items: { type: 'string' } },
    reasons: { type: 'array', items: { type: 'string' } },
  },
} as const;

export const submissionSchema = {
  type: 'object', additionalProperties: false, required: ['configOverrides', 'driverPod', 'admittedBy', 'sizing'],
  properties: {
    configOverrides: { type: ['object', 'null'], additionalProperties: true },
    driverPod: { type: 'boolean' },
    admittedBy: { type: ['string', 'null'] },
    sizing: { anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, required: ['driver', 'executor'], properties: { driver: podSizing, executor: podSizing, history: historySizing } }] },
  },
} as const;
