// The merge rule of SPEC: objects merge key by key, anything else (arrays included)
// is replaced, and the override wins. Inputs are never mutated.

type Plain = Record<string, unknown>;

const isPlainObject = (value: unknown): value is Plain =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function deepMerge<T>(base: T | undefined, override: T | undefined): T {
  if (override === undefined) return clone(base) as T;
  if (!isPlainObject(base) || !isPlainObject(override)) return clone(override) as T;
  const merged: Plain = {};
  for (const key in base) merged[key] = base[key];
  for (const key in override) {
    const value = override[key];
    if (value !== undefined) merged[key] = deepMerge(base[key], value);
  }
  return merged as T;
}

/** A deep copy of JSON data (structuredClone is several times slower on small objects). */
export function clone<T>(value: T): T {
  if (Array.isArray(value)) return value.map(clone) as T;
  if (!isPlainObject(value)) return value;
  const copy: Plain = {};
  for (const key in value) copy[key] = clone(value[key]);
  return copy as T;
}
