const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Milliseconds of a duration such as `30d`, `12h`, `90m`, `45s` or `1.5h`; a bare number counts in
 * `bareUnit`. Undefined when the text is no such duration.
 */
export function parseDuration(text: string, bareUnit: 's' | 'm' | 'h' | 'd'): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(text.trim());
  return match ? Number(match[1]) * UNIT_MS[match[2] || bareUnit]! : undefined;
}
