// /api/apps/: submit (and dry-run), list, read, log, stop, delete.
import { pipeline } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppRecord, Cluster } from '../../cluster/cluster.js';
import type { SparkHistory } from '../../cluster/history/spark-history.js';
import type { JobProfiles } from '../../cluster/job-profiles.js';
import { encodeCursor } from '../../cluster/paging.js';
import { newAppName } from '../../cluster/app-name.js';
import { submitApplication } from '../../cluster/submit-application.js';
import type { V1Pod } from '@kubernetes/client-node';
import { type Application, type Submission, ref, schemaIds } from '../../schemas/index.js';
import { mayActOnApplication, type SubmissionPolicy } from '../../domain/index.js';
import { HttpError, notFound } from '../errors.js';
import type { FairShare } from '../fair-share.js';
import { countSubmission } from '../metrics.js';
import { countsSchema, countStates, skipBytes, submissionSchema, summaryListSchema, toApplication, toSummary } from '../present.js';
import { claimRoute } from './claim.js';
import { labelSelectorQuery, parseLabelSelector, searchQuery } from './list-filters.js';
import { bodyFingerprint, IDEMPOTENCY_HEADER, Idempotency, parseIdempotencyKey, scopedKeyHash, withIdempotencyMark } from '../idempotency.js';
import { redactConfig, redactEnvFor, seesEnvOf } from '../redact-env.js';
import { launcherTokenOf, refuseServiceLabels } from '../service-labels.js';

/**
 * A page stops early once its items reach this many bytes of JSON (the first item always
 * fits): a list call never carries or builds hundreds of megabytes, whatever `limit` says;
 * `next` then continues after the last item sent.
 */
export const LIST_PAGE_BYTES = 1024 * 1024;

function withinBudget(records: AppRecord[], next: string | null, history: SparkHistory | undefined, jobs: JobProfiles | undefined): { items: Application[]; next: string | null } {
  const items: Application[] = [];
  let bytes = 0;
  for (const [i, record] of records.entries()) {
    const item = toApplication(record, history, jobs);
    bytes += JSON.stringify(item).length;
    if (i > 0 && bytes > LIST_PAGE_BYTES) return { items, next: encodeCursor(records[i - 1]) };
    items.push(item);
  }
  return { items, next };
}

const errorResponses = { 400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 404: ref(schemaIds.error), 503: ref(schemaIds.error) };
const appNameParams = {
  type: 'object', required: ['appName'], additionalProperties: false,
  properties: { appName: { type: 'string', maxLength: 63 } },
} as const;

export async function appRoutes(app: FastifyInstance, { cluster, policy, history, jobs, gatewayProof, fairShare, idempotencyWindowMs }: { cluster: Cluster; policy: SubmissionPolicy; history?: SparkHistory; jobs?: JobProfiles; gatewayProof?: string; fairShare: FairShare; idempotencyWindowMs?: number }) {
  const idempotency = new Idempotency(cluster, idempotencyWindowMs);
  /** 404 when absent; 403 when a user key acts on an application another key submitted (policy.ts). */
  const ownApplication = async (request: FastifyRequest<{ Params: { appName: string } }>, action: string) => {
    const record = await cluster.get(request.params.appName);
    if (!record) throw notFound(`application ${request.params.appName}`);
    if (!mayActOnApplication(request.apiKey, record, policy)) {
      throw new HttpError(403, `a user key may ${action} only the applications it submitted; ${record.appName} was submitted by another key (an admin key may act on every application)`);
    }
    return record;
  };

  app.post<{ Body: Submission; Querystring: { dryRun?: boolean } }>('/api/apps/', {
    onResponse: countSubmission,
    config: { ...fairShare.submissionRate },
    schema: {
      summary: 'Submit an application',
      description: 'Merges the template with configOverrides, fills in defaults, sizes the pods to fit the node pools and writes the driver pod. With dryRun=true, the same path runs and nothing is created (answer 200). With an Idempotency-Key header (a quoted string, at most 255 characters; IETF draft "The Idempotency-Key HTTP Header Field"), a repeat of the same key by the same API key with the same body within the idempotency window (default 24 h) answers the application the first request made (200, not a second run); the same key with another body answers 422 (code IDEMPOTENCY_KEY_REUSED); a malformed key 400.',
      tags: ['apps'],
      body: ref(schemaIds.submission),
      querystring: { type: 'object', additionalProperties: false, properties: { dryRun: { type: 'boolean', default: false } } },
      headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', maxLength: 1024, description: 'Makes the submission safe to repeat: an sf-string such as "8e03978e-40d5-43e8-bc93-6894a57f9324" (a bare token is accepted too)' } } },
      response: { 200: ref(schemaIds.application), 201: ref(schemaIds.application), ...errorResponses, 409: ref(schemaIds.error), 422: { anyOf: [ref(schemaIds.unschedulableError), ref(schemaIds.error)] }, 429: ref(schemaIds.error) },
    },
  }, async (request, reply) => {
    const { jobName, configTemplateName, configOverrides, labels } = request.body;
    refuseServiceLabels(request.body, request.headers, gatewayProof);
    const key = parseIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
    const launcherToken = launcherTokenOf(request.headers, gatewayProof);
    const dryRun = request.query.dryRun === true;
    const create = async (appName: string, mark?: string) => {
      const decorate = mark === undefined ? undefined : (pod: V1Pod) => withIdempotencyMark(pod, mark);
      // Counted toward the key's unfinished applications from now on (429 when it holds its cap).
      const counted = dryRun ? undefined : fairShare.reserveApplication(request);
      // The same path as a schedule's ticks (cluster/submit-application.ts).
      const result = await submitApplication(cluster, { appName, jobName, configTemplateName, configOverrides, labels, submittedBy: request.apiKey?.id }, { dryRun, launcherToken, decorate })
        .catch((error: unknown) => { counted?.(); throw error; });
      counted?.(result.ok ? result.record : undefined);
      if (!result.ok) {
        // A refusal at 5xx (admission threw, a cluster fault passed back) is never answered unlogged.
        if (result.status >= 500) request.log.error({ statusCode: result.status, body: result.body }, 'submission refused by the cluster');
        return reply.code(result.status).send(result.body);
      }
      request.auditTarget = result.record.appName;
      if (dryRun) {
        const { appName: name, jobName: job, configTemplateName: template, labels: own, config } = result.record;
        return reply.code(200).send({ appName: name, jobName: job, configTemplateName: template, labels: own, config });
      }
      return reply.code(201).send(toApplication(result.record, history));
    };
    // A dry run keeps nothing, so it needs no key's record.
    if (key === undefined || dryRun) return create(newAppName(jobName));
    const keyHash = scopedKeyHash(request.apiKey?.id, key);
    return idempotency.submit(keyHash, bodyFingerprint(request.body), create, (record) => {
      request.auditTarget = record.appName;
      return reply.code(200).send(redactEnvFor(toApplication(record, history), request.apiKey));
    });
  });

  app.get<{ Querystring: { jobName?: string; state?: never; labelSelector?: string; q?: string; limit: number; cursor?: string; view: 'full' | 'summary' } }>('/api/apps/', {
    schema: {
      summary: 'List applications, newest first',
      description: 'view=summary leaves `config` and `transitions` out of every item (the other fields as in Application): what a list page needs, a small fraction of the bytes. q searches (case-insensitive substring of appName, jobName or any label value) and combines with the other filters and with cursor paging.',
      tags: ['apps'],
      querystring: {
        type: 'object', additionalProperties: false,
        properties: {
          jobName: { type: 'string', maxLength: 63 },
          state: ref(schemaIds.applicationState),
          labelSelector: labelSelectorQuery,
          q: searchQuery,
          limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
          cursor: { type: 'string', maxLength: 1024 },
          view: { type: 'string', enum: ['full', 'summary'], default: 'full', description: 'summary: items without `config` and `transitions`' },
        },
      },
      // Summaries first: a full page fails that branch at its first item's config, at once.
      response: { 200: { anyOf: [summaryListSchema, ref(schemaIds.applicationList)] }, ...errorResponses },
    },
  }, async (request, reply) => {
    const { labelSelector, view, ...query } = request.query;
    const page = await cluster.list({ ...query, labels: parseLabelSelector(labelSelector) });
    if (view === 'summary') {
      return { items: page.items.map((record) => toSummary(record, history, jobs)), next: page.next };
    }
    const { items, next } = withinBudget(page.items, page.next, history, jobs);
    return { items: items.map((item) => redactEnvFor(item, request.apiKey)), next };
  });

  app.get<{ Querystring: { jobName?: string; labelSelector?: string; q?: string } }>('/api/apps/counts', {
    schema: {
      summary: 'How many applications are in each state, in all and per job',
      description: 'One pass over the records (no pages): what a dashboard shows above its list. jobName, labelSelector and q filter as in the list.',
      tags: ['apps'],
      querystring: {
        type: 'object', additionalProperties: false,
        properties: { jobName: { type: 'string', maxLength: 63 }, labelSelector: labelSelectorQuery, q: searchQuery },
      },
      response: { 200: countsSchema, ...errorResponses },
    },
  }, async (request) => {
    const { labelSelector, jobName, q } = request.query;
    const all = await cluster.list({ jobName, labels: parseLabelSelector(labelSelector), q, limit: Number.MAX_SAFE_INTEGER });
    return countStates(all.items);
  });

  app.get<{ Params: { appName: string } }>('/api/apps/:appName', {
    schema: { summary: 'Read an application', tags: ['apps'], params: appNameParams, response: { 200: ref(schemaIds.application), ...errorResponses } },
  }, async (request) => {
    const record = await cluster.get(request.params.appName);
    if (!record) throw notFound(`application ${request.params.appName}`);
    return redactEnvFor(toApplication(record, history, jobs), request.apiKey);
  });

  app.get<{ Params: { appName: string }; Querystring: { follow?: boolean; offset: number; container: string } }>('/api/apps/:appName/log', {
    schema: {
      summary: 'The driver log (plain text); follow=true streams until the application ends',
      description: 'offset=N starts at byte N (a reader that lost its connection resumes after the last byte it has); the answer says where it starts in X-Log-Offset. container=executor-N reads executor N\'s log instead (Kubernetes mode: from its pod, or from the archive once it is gone). In Kubernetes mode with the log archive on, a log is read from the archive once its pod is gone.',
      tags: ['apps'],
      params: appNameParams,
      querystring: {
        type: 'object', additionalProperties: false,
        properties: {
          follow: { type: 'boolean', default: false }, offset: { type: 'integer', minimum: 0, default: 0 },
          container: { type: 'string', pattern: '^(driver|executor-[1-9][0-9]{0,5})$', default: 'driver' },
        },
      },
      response: { 200: { type: 'string', description: 'text/plain' }, ...errorResponses, 429: ref(schemaIds.error) },
    },
  }, async (request, reply) => {
    await ownApplication(request, 'read the log of');
    const abort = new AbortController();
    // A followed log is a long-lived stream: counted per key, and ended when the key is revoked.
    const release = request.query.follow === true ? fairShare.holdStream(request, () => request.raw.socket.destroy()) : undefined;
    request.raw.once('close', () => { abort.abort(); release?.(); });
    const { container } = request.query;
    const stream = await cluster.log(request.params.appName, { follow: request.query.follow === true, signal: abort.signal, container });
    if (!stream) throw notFound(container === 'driver' || !(await cluster.get(request.params.appName)) ? `application ${request.params.appName}` : `log of ${container} of ${request.params.appName}`);
    reply.header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').header('x-log-offset', String(request.query.offset));
    // pipeline ends the source with the response (and passes a read error on to it, where
    // fastify logs it and cuts the answer short, as for an unskipped log).
    const body = request.query.offset > 0 ? pipeline(stream, skipBytes(request.query.offset), () => undefined) : stream;
    return reply.type('text/plain; charset=utf-8').send(body);
  });

  app.get<{ Params: { appName: string } }>('/api/apps/:appName/submission', {
    schema: {
      summary: 'What the application was submitted with, and how it was sized',
      description: 'configOverrides as submitted (from the driver pod, or in Kubernetes mode from the copy the controller keeps on the Application once the pod is gone; null when neither is there), admittedBy (the admission mark on the driver pod, kept the same way; null when it missed admission), and sizing: for driver and executor, the pool and the reasons, as admission (the webhook, or local mode\'s in-process admission) recorded them on the driver pod in the annotation `submission-service/sizing` (compact JSON, at most 8192 characters: at most 6 reasons of at most 240 characters per pod; with `history`, sizing from the job\'s past runs: mode, whether applied, the executor as asked, the runs it is based on and at most 6 reasons); null when the pod missed admission, was admitted before decisions were recorded, or is gone with no copy kept.',
      tags: ['apps'],
      params: appNameParams,
      response: { 200: submissionSchema, ...errorResponses },
    },
  }, async (request) => {
    const info = await cluster.submission(request.params.appName);
    if (!info) throw notFound(`application ${request.params.appName}`);
    if (info.configOverrides && !seesEnvOf(request.apiKey, (await cluster.get(request.params.appName))?.submittedBy)) {
      return { ...info, configOverrides: redactConfig(info.configOverrides) };
    }
    return info;
  });

  app.post<{ Params: { appName: string } }>('/api/apps/:appName/stop', {
    schema: { summary: 'Stop an application (KILLED); its record stays', tags: ['apps'], params: appNameParams, response: { 200: ref(schemaIds.application), ...errorResponses } },
  }, async (request) => {
    await ownApplication(request, 'stop');
    const record = await cluster.stop(request.params.appName);
    if (!record) throw notFound(`application ${request.params.appName}`);
    return redactEnvFor(toApplication(record, history), request.apiKey);
  });

  claimRoute(app, { cluster, history, gatewayProof, fairShare });

  app.delete<{ Params: { appName: string } }>('/api/apps/:appName', {
    schema: { summary: 'Stop an application and remove its record', tags: ['apps'], params: appNameParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses } },
  }, async (request, reply) => {
    await ownApplication(request, 'delete');
    if (!(await cluster.delete(request.params.appName))) throw notFound(`application ${request.params.appName}`);
    return reply.code(204).send();
  });
}
