// Prometheus metrics: one registry per process (prom-client's default `register`), so every
// module adds its series to the same /metrics. Series are module-level singletons built
// through these helpers: a test process builds many servers and must never register a
// name twice (prom-client throws), so an existing series of the same name is reused.
import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from 'prom-client';

export { register };

/** Every series of ours starts with this. */
export const METRIC_PREFIX = 'submission_service_';

type Labels<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

export function counter<T extends string>(options: Labels<T>): Counter<T> {
  return (register.getSingleMetric(options.name) as Counter<T> | undefined) ?? new Counter<T>(options);
}

/** `collect`: fills the gauge at each scrape (for a value read from elsewhere). */
export function gauge<T extends string>(options: Labels<T> & { collect?: (this: Gauge<T>) => void }): Gauge<T> {
  return (register.getSingleMetric(options.name) as Gauge<T> | undefined) ?? new Gauge<T>(options);
}

export function histogram<T extends string>(options: Labels<T> & { buckets?: number[] }): Histogram<T> {
  return (register.getSingleMetric(options.name) as Histogram<T> | undefined) ?? new Histogram<T>(options);
}

/** Latency buckets in seconds, from a cache hit (0.5 ms) to a slow apiserver (10 s). */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The process series (CPU, memory, event loop lag, GC), once per process whoever asks first. */
export function collectProcessMetrics(): void {
  if (register.getSingleMetric('process_cpu_user_seconds_total')) return;
  // The event loop lag series samples every 100 ms, not prom-client's 10: an idle service wakes 10 times a second for it, not 100.
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 100 });
}

/** The exposition text and its content type, for any server that answers GET /metrics. */
export async function scrape(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
