// /api/schedules/: submissions made on a cron schedule (cluster/schedules/). A schedule belongs
// to the key that created it, and its runs are submitted as that key; users see and change
// their own, admins all (the same rule as applications, domain/policy.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Cluster } from '../../cluster/cluster.js';
import { emptyStatus, type ScheduleStore, type StoredSchedule } from '../../cluster/schedules/schedule-store.js';
import { submitApplication } from '../../cluster/submit-application.js';
import { isKernelLabel, isScheduleLabel, mayActOn, nextTick, scheduledRunName, scheduleProblem, type SubmissionPolicy } from '../../domain/index.js';
import { ref, type Schedule, type ScheduleRecord, schemaIds } from '../../schemas/index.js';
import { HttpError, notFound } from '../errors.js';
import { refuseServiceLabels } from '../service-labels.js';

const errors = { 400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 404: ref(schemaIds.error), 503: ref(schemaIds.error) };
const checked = { ...errors, 409: ref(schemaIds.error), 422: { anyOf: [ref(schemaIds.unschedulableError), ref(schemaIds.error)] } };
const nameParams = {
  type: 'object', required: ['name'], additionalProperties: false,
  properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
} as const;

export interface ScheduleRoutesOptions {
  store: ScheduleStore;
  cluster: Cluster;
  policy: SubmissionPolicy;
  /** Tells the scheduler loop that a schedule changed (local mode: it wakes at once). */
  changed?: () => void;
}

/** The API's view: the spec, its owner, what its ticks did, and when the next one is. */
export function toScheduleRecord(stored: StoredSchedule, now = new Date()): ScheduleRecord {
  const next = stored.spec.suspend ? null : nextTick(stored.spec, now);
  return { ...stored.spec, createdBy: stored.createdBy, createdAt: stored.createdAt, ...stored.status, nextRunAt: next?.toISOString() ?? null };
}

/**
 * 400 for what the schema cannot say; then a tick's submission, dry-run now: a schedule that
 * could never run is refused up front (its template missing, an override the policy refuses,
 * sizes no pool holds), with the answer a submission would get.
 */
async function check(spec: Schedule, cluster: Cluster, submittedBy: string | undefined) {
  const problem = scheduleProblem(spec);
  if (problem) throw new HttpError(400, problem.message, { field: problem.field });
  const own = Object.keys(spec.labels ?? {}).find((key) => isScheduleLabel(key) || isKernelLabel(key));
  if (own !== undefined) throw new HttpError(400, `field "labels": the label "${own}" is the service's own (it marks a schedule's runs, or a notebook kernel)`, { field: 'labels' });
  refuseServiceLabels({ jobName: spec.jobName, configOverrides: spec.configOverrides }, {}, undefined);
  const appName = scheduledRunName(spec.jobName, spec.name, new Date(), submittedBy ?? null);
  const result = await submitApplication(cluster, {
    appName, jobName: spec.jobName, configTemplateName: spec.configTemplateName || undefined, configOverrides: spec.configOverrides, labels: spec.labels, submittedBy,
  }, { dryRun: true });
  return result.ok ? undefined : result;
}

export async function scheduleRoutes(app: FastifyInstance, { store, cluster, policy, changed }: ScheduleRoutesOptions) {
  /** 404 when absent; 403 when a user key acts on a schedule another key created. */
  const ownSchedule = async (request: FastifyRequest<{ Params: { name: string } }>, action: string) => {
    const stored = await store.get(request.params.name);
    if (!stored) throw notFound(`schedule "${request.params.name}"`);
    if (!mayActOn(request.apiKey, stored.createdBy, policy)) {
      throw new HttpError(403, `a user key may ${action} only the schedules it created; "${stored.spec.name}" was created by another key (an admin key may act on every schedule)`);
    }
    return stored;
  };

  app.post<{ Body: Schedule }>('/api/schedules/', {
    schema: {
      summary: 'Create a schedule',
      description: 'Each tick of `schedule` (cron, read in `timeZone`) submits `jobName` with the template and overrides, as POST /api/apps/ would for the key that created the schedule. The run is named `<jobName>-<yyyymmdd>-<hhmmss>-<10 characters from the owner key and the schedule name>` after the tick (UTC), so a tick makes at most one run, and is labelled schedule.submission-service.io/name and /tick (labels a submission may not set). A name held by an application that is not the run of that tick (an application of another key) is passed over for the next name of the tick and reported in lastOutcome. The submission is checked at once as a dry run: a missing template answers 404, a refused override 400, unschedulable sizes 422. A name in use answers 409.',
      tags: ['schedules'],
      body: ref(schemaIds.schedule),
      response: { 201: ref(schemaIds.scheduleRecord), ...checked },
    },
  }, async (request, reply) => {
    if (await store.get(request.body.name)) throw new HttpError(409, `schedule "${request.body.name}" already exists`);
    const refused = await check(request.body, cluster, request.apiKey?.id);
    if (refused) return reply.code(refused.status).send(refused.body);
    const created = await store.create({ spec: request.body, createdBy: request.apiKey?.id ?? null, createdAt: new Date().toISOString(), status: emptyStatus() });
    changed?.();
    return reply.code(201).send(toScheduleRecord(created));
  });

  app.get('/api/schedules/', {
    schema: { summary: 'List schedules (a user key: its own)', tags: ['schedules'], response: { 200: ref(schemaIds.scheduleList), ...errors } },
  }, async (request) => {
    const mine = (await store.list()).filter((s) => mayActOn(request.apiKey, s.createdBy, policy));
    return { items: mine.map((s) => toScheduleRecord(s)) };
  });

  app.get<{ Params: { name: string } }>('/api/schedules/:name', {
    schema: { summary: 'Read a schedule', tags: ['schedules'], params: nameParams, response: { 200: ref(schemaIds.scheduleRecord), ...errors } },
  }, async (request) => toScheduleRecord(await ownSchedule(request, 'read')));

  app.put<{ Params: { name: string }; Body: Schedule }>('/api/schedules/:name', {
    schema: {
      summary: 'Replace a schedule', description: 'Owner, creation time and the record of past ticks stay; checked as POST is.',
      tags: ['schedules'], params: nameParams, body: ref(schemaIds.schedule), response: { 200: ref(schemaIds.scheduleRecord), ...checked },
    },
  }, async (request, reply) => {
    if (request.body.name !== request.params.name) {
      throw new HttpError(400, `the body's name "${request.body.name}" differs from the path's "${request.params.name}"`, { field: 'name' });
    }
    await ownSchedule(request, 'change');
    const refused = await check(request.body, cluster, request.apiKey?.id);
    if (refused) return reply.code(refused.status).send(refused.body);
    const replaced = await store.replace(request.body);
    changed?.();
    return toScheduleRecord(replaced);
  });

  for (const [verb, suspend] of [['pause', true], ['resume', false]] as const) {
    app.post<{ Params: { name: string } }>(`/api/schedules/:name/${verb}`, {
      schema: {
        summary: suspend ? 'Pause a schedule (suspend: true)' : 'Resume a schedule (suspend: false)',
        description: suspend ? 'No tick makes a run until it is resumed.' : 'Ticks passed while paused follow startingDeadlineSeconds: at most the latest one runs, and none if it is past the deadline.',
        tags: ['schedules'], params: nameParams, response: { 200: ref(schemaIds.scheduleRecord), ...errors },
      },
    }, async (request) => {
      const stored = await ownSchedule(request, verb);
      const replaced = await store.replace({ ...stored.spec, suspend });
      changed?.();
      return toScheduleRecord(replaced);
    });
  }

  app.delete<{ Params: { name: string } }>('/api/schedules/:name', {
    schema: { summary: 'Delete a schedule (its runs stay, as applications)', tags: ['schedules'], params: nameParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors } },
  }, async (request, reply) => {
    await ownSchedule(request, 'delete');
    if (!(await store.delete(request.params.name))) throw notFound(`schedule "${request.params.name}"`);
    changed?.();
    return reply.code(204).send();
  });
}
