// What a run cost: core-hours and GiB-hours requested (what its pods held, from the sized
// config and how long each pod lived) and used (task CPU time; each executor's peak memory
// over its life), from its profile (run-profile.ts). Pure.
import type { ApplicationConfig } from '../schemas/index.js';
import { parseMemoryMib } from './quantities.js';
import type { RunProfile } from './run-profile.js';
import { podMemoryMib } from './spark-properties.js';

export interface RunCost {
  requestedCoreHours: number;
  requestedGibHours: number;
  /** null: no event log was read (the run wrote none, or it is not read yet). */
  usedCoreHours: number | null;
  usedGibHours: number | null;
}

const HOUR_MS = 3_600_000;
const round = (value: number): number => Math.round(value * 1e6) / 1e6;

/** A pod's memory request in GiB: Spark's memory plus its overhead, as the pod asks (spark-properties.ts). */
export function podGib(memory: string | undefined, overheadFactor: number): number {
  return memory === undefined ? 0 : podMemoryMib(parseMemoryMib(memory), overheadFactor) / 1024;
}

/**
 * `durationMs`: the run's own (its profile's, else its record's start to end). Executors count
 * for the time the log shows them held; without executors in the log (local mode, or no log)
 * for `instances` × the run.
 */
export function runCost(config: ApplicationConfig, durationMs: number, profile: RunProfile | null, overheadFactor: number): RunCost {
  const driver = config.driver ?? {};
  const executor = config.executor ?? {};
  const executorMs = profile && profile.executorHeldMs > 0 ? profile.executorHeldMs : Math.max(1, executor.instances ?? 1) * durationMs;
  const coreMs = (driver.cores ?? 1) * durationMs + (executor.cores ?? 1) * executorMs;
  const gibMs = podGib(driver.memory, overheadFactor) * durationMs + podGib(executor.memory, overheadFactor) * executorMs;
  return {
    requestedCoreHours: round(coreMs / HOUR_MS),
    requestedGibHours: round(gibMs / HOUR_MS),
    usedCoreHours: profile ? round(profile.taskCpuMs / HOUR_MS) : null,
    usedGibHours: profile ? round(profile.usedMemoryByteMs / 2 ** 30 / HOUR_MS) : null,
  };
}
