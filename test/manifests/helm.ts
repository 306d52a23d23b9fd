// Helm for the chart tests: built from its Go module by manifests/install-helm.sh (cached),
// then `helm template` parsed into objects with the YAML reader of @kubernetes/client-node.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type KubernetesObject, loadAllYaml } from '@kubernetes/client-node';

export const chartDir = fileURLToPath(new URL('../../manifests/chart', import.meta.url));
const installScript = fileURLToPath(new URL('../../manifests/install-helm.sh', import.meta.url));

let cached: string | undefined;
/** The helm binary; the first call may build it (minutes, once per machine). */
export function helmBinary(): string {
  if (!cached) {
    const out = execFileSync('bash', [installScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    cached = out.trim().split('\n').at(-1)!;
  }
  return cached;
}

export function helm(args: string[]): { status: number; output: string } {
  try {
    const output = execFileSync(helmBinary(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, output };
  } catch (error) {
    const failed = error as { status: number; stdout: string; stderr: string };
    return { status: failed.status ?? 1, output: `${failed.stdout}${failed.stderr}` };
  }
}

export const RELEASE_NAMESPACE = 'submission-service';

/** `helm template` with --set pairs; throws with helm's message when rendering fails. */
export function renderChart(sets: Record<string, string> = {}, extra: string[] = []): KubernetesObject[] {
  const setArgs = Object.entries(sets).flatMap(([key, value]) => ['--set', `${key}=${value}`]);
  const result = helm(['template', 'ss', chartDir, '--namespace', RELEASE_NAMESPACE, ...setArgs, ...extra]);
  if (result.status !== 0) throw new Error(`helm template failed:\n${result.output}`);
  return (loadAllYaml(result.output) as (KubernetesObject | null)[]).filter((o): o is KubernetesObject => o !== null && o !== undefined);
}

export const ofKind = <T = KubernetesObject>(objects: KubernetesObject[], kind: string): T[] =>
  objects.filter((o) => o.kind === kind) as T[];

export function named<T = KubernetesObject>(objects: KubernetesObject[], kind: string, name: string): T | undefined {
  return objects.find((o) => o.kind === kind && o.metadata?.name === name) as T | undefined;
}
