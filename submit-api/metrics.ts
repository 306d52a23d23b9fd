// Submissions by outcome: what POST /api/apps/ answered, counted whether the handler ran
// or validation, authentication or the cluster answered first.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { counter } from '../lib/metrics.js';

export const submissionsTotal = counter({
  name: 'submission_service_submissions_total',
  help: 'POST /api/apps/ answers by outcome: created, dry_run, invalid (400), unauthorized (401/403), not_found (template), conflict, unschedulable (422), rejected (other 4xx), failed (5xx)',
  labelNames: ['outcome'] as const,
});

export function submissionOutcome(statusCode: number): string {
  if (statusCode === 201) return 'created';
  if (statusCode === 200) return 'dry_run';
  if (statusCode === 400) return 'invalid';
  if (statusCode === 401 || statusCode === 403) return 'unauthorized';
  if (statusCode === 404) return 'not_found';
  if (statusCode === 409) return 'conflict';
  if (statusCode === 422) return 'unschedulable';
  return statusCode >= 500 ? 'failed' : 'rejected';
}

/** A route-level onResponse hook for the submit route. */
export async function countSubmission(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  submissionsTotal.inc({ outcome: submissionOutcome(reply.statusCode) });
}
