// Every admission leaves a trace: a count and a latency by outcome (Prometheus), and one log
// line with the review's uid, the application and the outcome, so a denial the apiserver
// reports by uid can be found here. An admission that threw is logged as an error with it.
import type { Logger } from 'pino';
import { LATENCY_BUCKETS, counter, histogram } from '../../lib/metrics.js';
import type { ReviewResult } from './review.js';

export const admissionsTotal = counter({
  name: 'submission_service_admissions_total',
  help: 'AdmissionReviews answered, by outcome (admitted, refused, ignored, skipped, malformed, failed)',
  labelNames: ['outcome'] as const,
});

export const admissionDuration = histogram({
  name: 'submission_service_admission_duration_seconds',
  help: 'Time from a parsed AdmissionReview to its answer (cache fill included), by outcome',
  labelNames: ['outcome'] as const,
  buckets: LATENCY_BUCKETS,
});

export function recordReview(result: ReviewResult, durationMs: number, logger: Logger | undefined): void {
  admissionsTotal.inc({ outcome: result.outcome });
  admissionDuration.observe({ outcome: result.outcome }, durationMs / 1000);
  if (!logger) return;
  const fields = { uid: result.uid, app: result.appName, outcome: result.outcome, durationMs: Math.round(durationMs * 1000) / 1000, detail: result.detail };
  if (result.outcome === 'failed') logger.error({ ...fields, err: result.error }, 'admission failed');
  else if (result.outcome === 'malformed') logger.warn(fields, 'admission review malformed');
  else logger.info(fields, 'admission');
}
