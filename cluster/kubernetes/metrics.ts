// The controller's Prometheus series, on prom-client's default registry (the API's /metrics
// serves it). Defined once per process: a second API in one process (tests) shares them.
import { Counter, Gauge, Histogram, register } from 'prom-client';

function once<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

export const watchRestarts = once('submission_service_watch_restarts_total', () => new Counter({
  name: 'submission_service_watch_restarts_total',
  help: 'Informer watches restarted after an error, by resource.',
  labelNames: ['resource'],
}));

export const admissionCacheLookups = once('submission_service_admission_cache_lookups_total', () => new Counter({
  name: 'submission_service_admission_cache_lookups_total',
  help: "Admission cache lookups (templates, drivers of executors): hit, miss (filled with one GET), or shared (waited for the GET another review started).",
  labelNames: ['cache', 'result'],
}));

export const applicationsByState = once('submission_service_applications', () => new Gauge({
  name: 'submission_service_applications',
  help: 'Applications in the namespace by state, as the cache of this process sees them.',
  labelNames: ['state'],
}));

export const transitionSeconds = once('submission_service_state_transition_seconds', () => new Histogram({
  name: 'submission_service_state_transition_seconds',
  help: 'Time from one state to the next (submitted -> running -> ended), recorded by the controller when it writes the transition.',
  labelNames: ['from', 'to'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200],
}));

export const statusWrites = once('submission_service_controller_writes_total', () => new Counter({
  name: 'submission_service_controller_writes_total',
  help: "The controller's writes to Applications, by kind (status, config) and outcome (ok, conflict, gone, invalid (422, logged), error, not-leader).",
  labelNames: ['kind', 'outcome'],
}));

export const informerHandlerErrors = once('submission_service_informer_handler_errors_total', () => new Counter({
  name: 'submission_service_informer_handler_errors_total',
  help: 'Informer event handlers that threw, by resource and event: logged, and the object skipped (the process goes on).',
  labelNames: ['resource', 'event'],
}));

export const informerLists = once('submission_service_informer_lists_total', () => new Counter({
  name: 'submission_service_informer_lists_total',
  help: 'Full lists by informers, by resource: the first, and each relist after a watch answered 410 Gone.',
  labelNames: ['resource'],
}));

export const malformedAnnotations = once('submission_service_malformed_annotations_total', () => new Counter({
  name: 'submission_service_malformed_annotations_total',
  help: "Driver pods seen with a config annotation that cannot be read (edited after admission), by component (api, webhook).",
  labelNames: ['component'],
}));

export const controllerQueue = once('submission_service_controller_queue_depth', () => new Gauge({
  name: 'submission_service_controller_queue_depth',
  help: "Application names waiting in the controller's work queue (not counting those in flight or waiting out a backoff).",
}));

export const controllerRetries = once('submission_service_controller_retries_total', () => new Counter({
  name: 'submission_service_controller_retries_total',
  help: 'Reconciles that failed and were queued again after a per-application backoff.',
}));

export const leaderGauge = once('submission_service_controller_leader', () => new Gauge({
  name: 'submission_service_controller_leader',
  help: '1 while this replica holds the controller Lease and may write, else 0.',
}));

export const leaseOutcomes = once('submission_service_lease_attempts_total', () => new Counter({
  name: 'submission_service_lease_attempts_total',
  help: 'Attempts to acquire or renew the controller Lease, by outcome (acquired, renewed, held-by-other, conflict, error, timeout, lost).',
  labelNames: ['outcome'],
}));
