// Records crafted in a local data dir: many ended applications at once, without running any.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STATES = ['COMPLETED', 'FAILED', 'KILLED'] as const;

/** Writes `count` ended applications of jobs etl-0..etl-4, oldest first; every 10th has label owner=Data-Team. */
export function craftRecords(dataDir: string, count: number): string[] {
  mkdirSync(join(dataDir, 'apps'), { recursive: true });
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const jobName = `etl-${i % 5}`;
    const created = new Date(Date.parse('2026-11-01T00:00:00Z') + i * 60_000).toISOString();
    const appName = `${jobName}-${created.slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${String(i).padStart(5, '0')}`;
    const record = {
      appName, jobName, configTemplateName: '', config: {}, state: STATES[i % 3], stateDetail: 'crafted', createdAt: created,
      startedAt: created, endedAt: created, runningExecutors: 0, namespace: 'local', submittedBy: null,
      labels: i % 10 === 0 ? { owner: 'Data-Team', n: String(i) } : { n: String(i) },
    };
    writeFileSync(join(dataDir, 'apps', `${appName}.json`), JSON.stringify({ record, pod: {} }));
    names.push(appName);
  }
  return names;
}
