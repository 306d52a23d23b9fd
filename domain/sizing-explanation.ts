// Why an application's pods got their size: which pool each went to and where its CPU and
// memory request came from, told from the effective config and the rules (pure; the app page
// shows it). It repeats sizePod's arithmetic rather than recording it at admission: the sized
// config plus the rules determine the pool (an explicit request kept by rule 6 is what excluded
// any smaller pool, and it is in the config too).
import type { ApplicationConfig, PodConfig } from '../schemas/index.js';
import { formatMillicores, parseMemoryMib, parseMillicores } from './quantities.js';
import type { AdmissionRules, ResolvedPool } from './rules.js';
import type { Role } from './sizing.js';

export interface PodSizingExplanation {
  /** The pool's instanceName; null when none fits (the config came from elsewhere, or the rules changed since). */
  pool: string | null;
  cores?: number;
  coreRequest?: string;
  memory?: string;
  /** One sentence per decision, in order: pool, cores, CPU request, memory. */
  reasons: string[];
}

function explainPod(role: Role, pod: PodConfig, rules: AdmissionRules): PodSizingExplanation {
  const candidates = role === 'driver' ? rules.pools.filter((p) => !p.preemptible) : rules.pools;
  const kind = role === 'driver' ? 'non-preemptible pool' : 'pool';
  const { cores, coreRequest, memory } = pod;
  const pool = candidates.find((p: ResolvedPool) =>
    (cores === undefined || cores <= p.cpu)
    && (coreRequest === undefined || parseMillicores(coreRequest) <= p.maxCoreMillicores)
    && (memory === undefined || parseMemoryMib(memory) <= p.maximumSchedulableMemoryRequestMib));
  if (!pool || cores === undefined) {
    return { pool: null, cores, coreRequest, memory, reasons: [`No ${kind} of the current rules holds this ${role} (the rules may have changed since it was admitted).`] };
  }
  const reasons = [`${pool.instanceName}: the smallest ${kind} that holds ${cores} core${cores === 1 ? '' : 's'} and the requests below (${pool.cpu} CPU, at most ${formatMillicores(pool.maxCoreMillicores)} CPU and ${pool.maximumSchedulableMemoryRequestMib} MiB schedulable per pod).`];
  const share = Math.floor((pool.maxCoreMillicores * cores) / pool.cpu);
  const reserve = rules.sizing.defaultDriverCoreRequestReserveMillicores;
  if (role === 'executor' && cores === pool.cpu) reasons.push(`${cores} cores: a whole node of the pool (an executor without cores takes one), or as asked.`);
  if (role === 'driver' && cores === rules.sizing.defaultDriverCores) reasons.push(`${cores} core${cores === 1 ? '' : 's'}: the default for drivers (defaultDriverCores), or as asked.`);
  const requested = coreRequest === undefined ? undefined : parseMillicores(coreRequest);
  if (requested === share) reasons.push(`CPU request ${coreRequest}: the pool's share ${cores}/${pool.cpu} of ${formatMillicores(pool.maxCoreMillicores)}.`);
  else if (role === 'driver' && requested === Math.max(1, share - reserve)) reasons.push(`CPU request ${coreRequest}: the share ${cores}/${pool.cpu} of ${formatMillicores(pool.maxCoreMillicores)} (${formatMillicores(share)}) minus ${reserve}m left for the per-pod agents (a default-sized driver).`);
  else if (coreRequest !== undefined) reasons.push(`CPU request ${coreRequest}: as given in the submission (rule 6).`);
  const memoryShare = Math.floor((pool.maximumSchedulableMemoryRequestMib * cores) / pool.cpu);
  if (memory !== undefined && parseMemoryMib(memory) === memoryShare) reasons.push(`Memory ${memory}: the share ${cores}/${pool.cpu} of ${pool.maximumSchedulableMemoryRequestMib} MiB.`);
  else if (memory !== undefined) reasons.push(`Memory ${memory}: as given in the submission (rule 6).`);
  return { pool: pool.instanceName, cores, coreRequest, memory, reasons };
}

/** Which pool the driver and the executors went to, and why. */
export function explainSizing(config: ApplicationConfig, rules: AdmissionRules): { driver: PodSizingExplanation; executor: PodSizingExplanation } {
  return { driver: explainPod('driver', config.driver ?? {}, rules), executor: explainPod('executor', config.executor ?? {}, rules) };
}
