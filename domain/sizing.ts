// Pod sizing, SPEC's rules 1-6, for any set of node pools.
//   - A pod goes to the smallest pool that can hold it (drivers: non-preemptible pools only).
//   - `cores` chooses the pool; `coreRequest` and `memory` default to the share cores/cpu of that
//     pool's schedulable maxima (rule 2). Without `cores`, an executor takes a whole node of the
//     smallest pool, a driver `defaultDriverCores` on the smallest non-preemptible one (rule 1).
//   - A default-sized driver leaves `defaultDriverCoreRequestReserveMillicores` of its CPU share
//     (850m - 140m = 710m in SPEC's example).
//   - Explicit `coreRequest` and `memory` are kept (rule 6) and must fit the pool too.
import type { ApplicationConfig, PodConfig, UnschedulableError, UnschedulablePod } from '../schemas/index.js';
import { formatMemoryMib, formatMillicores, parseMemoryMib, parseMillicores } from './quantities.js';
import type { AdmissionRules, ResolvedPool } from './rules.js';

export type Role = 'driver' | 'executor';

export type SizingResult =
  | { ok: true; config: ApplicationConfig }
  | { ok: false; error: UnschedulableError };

type PodSizing = { ok: true; pod: PodConfig } | { ok: false; refusal: UnschedulablePod };

export const UNSCHEDULABLE_MESSAGE =
  'Pods are unschedulable: the requested resources are above the capacities of the available node pools.';
export const UNSCHEDULABLE_ADVICE =
  'Modify the configuration so that the driver and executor pods fit the maximum capacities of at least one node pool listed below.';

const poolsFor = (role: Role, rules: AdmissionRules): ResolvedPool[] =>
  role === 'driver' ? rules.pools.filter((p) => !p.preemptible) : rules.pools;

function fits(pool: ResolvedPool, cores: number | undefined, coreRequest?: string, memory?: string): boolean {
  if (cores !== undefined && cores > pool.cpu) return false;
  if (coreRequest !== undefined && parseMillicores(coreRequest) > pool.maxCoreMillicores) return false;
  if (memory !== undefined && parseMemoryMib(memory) > pool.maximumSchedulableMemoryRequestMib) return false;
  return true;
}

/** The pool entry of SPEC's error body: exactly its seven fields. */
export function describePool(pool: ResolvedPool) {
  const { cloudProvider, cpu, instanceName, maximumSchedulableCoreRequest, maximumSchedulableMemoryRequestMib, memoryMib, preemptible } = pool;
  return { cloudProvider, cpu, instanceName, maximumSchedulableCoreRequest, maximumSchedulableMemoryRequestMib, memoryMib, preemptible };
}

/** What the submission asked for that sizing reads: the echo of SPEC's error body. */
function sizingInput({ cores, coreRequest, memory }: PodConfig): PodConfig {
  return Object.fromEntries(Object.entries({ cores, coreRequest, memory }).filter(([, v]) => v !== undefined));
}

export function sizePod(role: Role, requested: PodConfig, rules: AdmissionRules): PodSizing {
  const candidates = poolsFor(role, rules);
  const defaultDriver = role === 'driver' && requested.cores === undefined;
  const cores = requested.cores ?? (role === 'driver' ? rules.sizing.defaultDriverCores : undefined);
  const pool = candidates.find((p) => fits(p, cores, requested.coreRequest, requested.memory));
  if (!pool) {
    return { ok: false, refusal: { availableNodePools: candidates.map(describePool), targetInputConfig: sizingInput(requested) } };
  }
  const podCores = cores ?? pool.cpu;
  // Integer arithmetic: the share of the pool is podCores / pool.cpu.
  let millicores = Math.floor((pool.maxCoreMillicores * podCores) / pool.cpu);
  if (defaultDriver) millicores = Math.max(1, millicores - rules.sizing.defaultDriverCoreRequestReserveMillicores);
  const memoryMib = Math.floor((pool.maximumSchedulableMemoryRequestMib * podCores) / pool.cpu);
  return {
    ok: true,
    pod: {
      ...requested,
      cores: podCores,
      coreRequest: requested.coreRequest ?? formatMillicores(millicores),
      memory: requested.memory ?? formatMemoryMib(memoryMib),
    },
  };
}

/** Sizes driver and executor; refuses with SPEC's body naming every pod that fits nowhere. */
export function sizeApplication(config: ApplicationConfig, rules: AdmissionRules): SizingResult {
  const driver = sizePod('driver', config.driver ?? {}, rules);
  const executor = sizePod('executor', config.executor ?? {}, rules);
  if (driver.ok && executor.ok) return { ok: true, config: { ...config, driver: driver.pod, executor: executor.pod } };
  const error: UnschedulableError = { advice: UNSCHEDULABLE_ADVICE, message: UNSCHEDULABLE_MESSAGE };
  if (!driver.ok) error.driver = driver.refusal;
  if (!executor.ok) error.executor = executor.refusal;
  return { ok: false, error };
}
