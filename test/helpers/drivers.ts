// Driver processes seen from outside: their records on disk, whether their process group
// is alive, and a last-resort cleanup so no test leaves a driver (or a History Server) running.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../../cluster/local/process-runner.js';
import type { StoredApp } from '../../cluster/local/record-store.js';

/** Record files as stored (only `*.json`, never temp files). */
export function storedApps(dataDir: string): StoredApp[] {
  const dir = join(dataDir, 'apps');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as StoredApp);
}

export function storedApp(dataDir: string, appName: string): StoredApp | undefined {
  const path = join(dataDir, 'apps', `${appName}.json`);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as StoredApp) : undefined;
}

/** Whether any process of the group led by pgid is left (signal 0 probes without sending). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Live processes of a group: pids whose /proc stat names the group and which are not
 * zombies (an orphan zombie waits for init to reap it; it runs nothing).
 */
export function liveGroupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') out.push(Number(name));
    } catch { /* ended meanwhile */ }
  }
  return out;
}

/**
 * SIGKILLs every driver process group recorded in dataDir that is still ours, and the History
 * Server the service started (its pid file in run/): a service killed with SIGKILL cannot end
 * its children, and the next start that would is not coming.
 */
export function killDrivers(dataDir: string): void {
  try {
    const [pid, startTicks] = readFileSync(join(dataDir, 'run', 'history-server.pid'), 'utf8').trim().split(' ').map(Number);
    if (pid > 1 && isAlive(pid, startTicks)) process.kill(-pid, 'SIGKILL');
  } catch { /* none started, or gone already */ }
  for (const { run } of storedApps(dataDir)) {
    if (!run) continue;
    // A pid whose process now has another start time belongs to someone else; while our
    // group exists its id cannot be handed out again, so "no such process" is still ours.
    const leaderGone = !existsSync(`/proc/${run.pid}`);
    if (isAlive(run.pid, run.startTicks) || leaderGone) {
      try { process.kill(-run.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
  }
}
