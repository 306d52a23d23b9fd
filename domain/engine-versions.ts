// Which Spark versions an installation offers (engineVersion), and the one refusal of any
// other: the API, dry runs, config templates, the webhook and local mode all ask here, so a
// version no image or virtualenv exists for is a 400 naming the offered ones, never a driver
// that fails later (ImagePullBackOff, or a local driver of the wrong Spark).
import type { ApplicationConfig } from '../schemas/index.js';

/**
 * Offered unless the installation says otherwise: the last 3.5 release, and the newest 4.x that
 * both the Python packages (pyspark, pyspark-client) and Maven Central serve (the Kubernetes
 * backend's jars), so one version runs the same in both modes.
 */
export const DEFAULT_ENGINE_VERSIONS: readonly string[] = ['3.5.7', '4.2.0'];
/** The default for a submission that names none: existing users' 3.5 applications keep their Spark. */
export const DEFAULT_ENGINE_VERSION = '3.5.7';

export interface EngineVersionRefusal {
  field: 'engineVersion';
  message: string;
}

/** Why `version` cannot run here (not among `offered`), or undefined when it can. */
export function engineVersionRefusal(version: string, offered: readonly string[]): EngineVersionRefusal | undefined {
  if (offered.includes(version)) return undefined;
  return { field: 'engineVersion', message: `engineVersion ${JSON.stringify(version)} is not offered here; offered: ${offered.join(', ')}` };
}

/** The version an application runs: its own (from a template or the overrides), else the installation's default. */
export const chosenEngineVersion = (config: ApplicationConfig, defaultVersion: string): string => config.engineVersion ?? defaultVersion;

/** A version's major number (`4.2.0` → 4); NaN for a string that is no version. */
export const engineMajor = (version: string): number => Number(/^(\d+)\./.exec(version)?.[1] ?? Number.NaN);

/** `major.minor` (`4.2.0` → `4.2`): what local mode's per-version virtualenvs are named by. */
export const engineMinor = (version: string): string => version.split('.').slice(0, 2).join('.');

/**
 * The offered list and default as the installation gives them, checked: a default that is not
 * offered, or a version that is no `X.Y.Z`, is a configuration mistake said at start.
 */
export function resolveEngineVersions(offered: readonly string[] | undefined, defaultVersion: string | undefined): { offered: string[]; defaultVersion: string } {
  const list = [...new Set(offered && offered.length > 0 ? offered : DEFAULT_ENGINE_VERSIONS)];
  const bad = list.find((v) => !/^\d+\.\d+\.\d+$/.test(v));
  if (bad !== undefined) throw new Error(`engineVersions: ${JSON.stringify(bad)} is not a version such as 3.5.7`);
  const chosen = defaultVersion ?? (list.includes(DEFAULT_ENGINE_VERSION) ? DEFAULT_ENGINE_VERSION : list[0]!);
  if (!list.includes(chosen)) throw new Error(`defaultEngineVersion ${chosen} is not among engineVersions (${list.join(', ')})`);
  return { offered: list, defaultVersion: chosen };
}
