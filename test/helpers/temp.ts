// Temporary directories that each test removes again, and a look at what a data dir holds.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

interface Teardown { teardown(fn: () => unknown): void }

/** A fresh directory under the OS temp dir, removed when the test ends. */
export function tempDir(t: Teardown, prefix = 'subsvc-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every file below dir (relative paths, sorted); directories themselves are not listed. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    let names: string[];
    try { names = readdirSync(d); } catch { return; }
    for (const name of names) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out.push(relative(dir, path));
    }
  };
  walk(dir);
  return out.sort();
}

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));
