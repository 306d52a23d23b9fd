// /api/jobs/{jobName}/…: what a job's past runs tell (sizing from them, their cost). A job is
// seen like its applications: a user key sees a job it ran at least once, an admin key all.
// Its figures are per key (cluster/job-profiles.ts): a user key sees its own runs' profile only,
// the one its submissions are sized from; an admin key any key's (?submittedBy=).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppRecord, Cluster } from '../../cluster/cluster.js';
import type { JobProfiles } from '../../cluster/job-profiles.js';
import { mayActOn, mayActOnApplication, type SubmissionPolicy } from '../../domain/index.js';
import { ref, schemaIds } from '../../schemas/index.js';
import { HttpError, notFound } from '../errors.js';

const size = {
  type: 'object', additionalProperties: false, required: ['cores', 'memory', 'instances'],
  properties: { cores: { type: 'integer' }, memory: { type: 'string' }, instances: { type: 'integer' } },
} as const;
const nullableNumber = { type: ['number', 'null'] } as const;

export const recommendationSchema = {
  title: 'Recommendation',
  type: 'object', additionalProperties: false, required: ['jobName', 'submittedBy', 'mode', 'recommendation', 'runs'],
  properties: {
    jobName: { type: 'string' },
    submittedBy: { type: ['string', 'null'], description: 'the key whose runs these are: each key\'s runs of a job are its own profile (null: runs submitted with no key)' },
    mode: { type: 'string', enum: ['off', 'recommend', 'apply'], description: "sizing.fromHistory of the job's newest run" },
    recommendation: {
      description: 'null while no completed run has an event log to size from',
      anyOf: [{ type: 'null' }, {
        type: 'object', additionalProperties: false, required: ['basedOn', 'current', 'suggested', 'evidence', 'saving', 'reasons'],
        properties: {
          basedOn: { type: 'array', items: { type: 'string' } },
          current: size,
          suggested: { ...size, properties: { ...size.properties, dynamicAllocation: { type: 'object', additionalProperties: false, properties: { minExecutors: { type: 'integer' }, maxExecutors: { type: 'integer' } } } } },
          evidence: { type: 'array', items: { type: 'object', additionalProperties: { type: ['number', 'string', 'null'] } } },
          saving: { type: 'object', additionalProperties: { type: 'number' } },
          reasons: { type: 'array', items: { type: 'string' } },
        },
      }],
    },
    runs: {
      type: 'array', description: 'the runs the job keeps, oldest first: each one\'s cost and executor size (for the trend chart)',
      items: {
        type: 'object', additionalProperties: false,
        properties: {
          appName: { type: 'string' }, state: { type: 'string' }, endedAt: { type: 'string' }, durationMs: { type: 'number' },
          asked: size, ran: size,
          requestedCoreHours: { type: 'number' }, requestedGibHours: { type: 'number' }, usedCoreHours: nullableNumber, usedGibHours: nullableNumber,
        },
      },
    },
  },
} as const;

export async function jobRoutes(app: FastifyInstance, { cluster, jobs, policy }: { cluster: Cluster; jobs?: JobProfiles; policy: SubmissionPolicy }) {
  /** 404 unless the caller may see one of the job's runs (an unknown job and another's look alike). */
  const visibleJob = async (request: FastifyRequest<{ Params: { jobName: string } }>) => {
    const { jobName } = request.params;
    const runs = await cluster.list({ jobName, limit: Number.MAX_SAFE_INTEGER });
    if (!runs.items.some((record) => mayActOnApplication(request.apiKey, record, policy))) throw notFound(`job ${jobName}`);
    return runs.items;
  };

  app.get<{ Params: { jobName: string }; Querystring: { submittedBy?: string } }>('/api/jobs/:jobName/recommendation', {
    schema: {
      summary: "The executor size a key's past runs of a job call for, with the evidence and the saving",
      description: 'From the event logs of the last completed runs the key made of the job (local mode keeps them under <data dir>/profiles): cores as the most tasks that ran at once on one executor, memory as the highest JVM heap (and process RSS where recorded) plus 25%, instances as the most tasks at once in all; never more than asked, except memory where runs spilled or died from it. A template or submission with sizing.fromHistory=apply is admitted at this size, from the submitting key\'s own runs only. A user key sees jobs it ran at least once, and only its own runs; an admin key any job, and any key\'s runs with submittedBy (default: the key of the job\'s newest run).',
      tags: ['jobs'],
      params: { type: 'object', required: ['jobName'], additionalProperties: false, properties: { jobName: { type: 'string', maxLength: 63 } } },
      querystring: { type: 'object', additionalProperties: false, properties: { submittedBy: { type: 'string', minLength: 1, maxLength: 256, description: 'admin keys: whose runs (a key id)' } } },
      response: { 200: recommendationSchema, 400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 404: ref(schemaIds.error) },
    },
  }, async (request) => {
    const records = await visibleJob(request);
    const { jobName } = request.params;
    const submittedBy = profileOwner(request, records, policy);
    // Only the runs of that key, and of those only what the caller may see of applications.
    const visible = new Set(records.filter((record) => mayActOnApplication(request.apiKey, record, policy)).map((record) => record.appName));
    const kept = (jobs?.runs(jobName, submittedBy) ?? []).filter((run) => visible.has(run.appName));
    const own = records.filter((record) => (record.submittedBy ?? null) === submittedBy);
    const newest = (own.length > 0 ? own : records).reduce((a, b) => (a.createdAt > b.createdAt ? a : b));
    return {
      jobName,
      submittedBy,
      mode: newest.config.sizing?.fromHistory ?? 'recommend',
      recommendation: jobs?.recommendation(jobName, submittedBy) ?? null,
      runs: kept.map(({ appName, state, endedAt, durationMs, asked, ran, cost }) => ({ appName, state, endedAt, durationMs, asked, ran, ...cost })),
    };
  });
}

/**
 * Whose profile of the job the caller reads: a user key its own, whatever it asks (403 for
 * another's); a caller that may act on every application (admin, or no authentication) the key
 * it names, else the key of the job's newest run.
 */
function profileOwner(request: FastifyRequest<{ Querystring: { submittedBy?: string } }>, records: AppRecord[], policy: SubmissionPolicy): string | null {
  const asked = request.query.submittedBy;
  const caller = request.apiKey;
  // mayActOn with no submitter: true only for a caller who may act on every application.
  if (mayActOn(caller, null, policy)) {
    if (asked !== undefined) return asked;
    return records.reduce((a, b) => (a.createdAt > b.createdAt ? a : b)).submittedBy ?? null;
  }
  if (asked !== undefined && asked !== caller!.id) {
    throw new HttpError(403, 'a user key sees only its own runs of a job (each key\'s runs are a profile of their own); an admin key may name another key with submittedBy');
  }
  return caller!.id;
}
