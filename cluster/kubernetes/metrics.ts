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
  help: "Admission cache lookups (templates, drivers of executors): hit, or miss (filled with one GET).",
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
  help: "The controller's writes to Applications, by kind (status, config) and outcome (ok, conflict, error).",
  labelNames: ['kind', 'outcome'],
}));
