// Kubernetes CPU and Spark memory strings, converted to integers so that sizing
// never suffers floating-point drift (6.8 cores x 6/8 must be exactly 5100m).

/** `1700m`, `1.5`, `2` -> millicores. */
export function parseMillicores(value: string): number {
  if (value.endsWith('m')) return Number.parseInt(value.slice(0, -1), 10);
  return Math.round(Number.parseFloat(value) * 1000);
}

export const formatMillicores = (millicores: number): string => `${millicores}m`;

/** Spark memory `4086m`, `4g` (also k and t) -> MiB, rounded down. */
export function parseMemoryMib(value: string): number {
  const match = /^([0-9]+)([kmgt]?)b?$/i.exec(value.trim());
  if (!match) throw new Error(`not a memory size: ${value}`);
  const amount = Number(match[1]);
  switch (match[2].toLowerCase()) {
    case 'k': return Math.floor(amount / 1024);
    case 'g': return amount * 1024;
    case 't': return amount * 1024 * 1024;
    default: return amount; // Spark reads a bare number as MiB for executor and driver memory
  }
}

export const formatMemoryMib = (mib: number): string => `${mib}m`;
