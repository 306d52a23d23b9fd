// After a `reset` of the API's change feed (events were lost: a restart of the API, another
// replica) the gateway lists the kernels' applications again and makes its list match, both
// ways: applications it does not track are found again, and kernels whose application is gone
// or ended leave (missed `deleted` and terminal events). Pure: the registry applies the plan.
import { type ApiApplication, TERMINAL_STATES } from './api-client.js';

export interface TrackedKernel {
  id: string;
  /** '' while its submission is in flight: the API may not list it yet, so it is left alone. */
  appName: string;
  /** Being ended by the gateway (its application's removal in flight): the removal decides. */
  ending: boolean;
}

export interface ReconcilePlan {
  /** Running applications of kernels the gateway does not track. */
  found: ApiApplication[];
  /** Tracked kernels whose application is gone or ended, with the reason to show. */
  gone: Array<{ id: string; reason: string }>;
}

/**
 * `tracked`: the kernels known when the listing began (a kernel submitted during the listing is
 * not in it, and must not count as gone); `apps`: the listing; `idOf`: an application's kernel id.
 */
export function reconcileKernels(tracked: TrackedKernel[], apps: ApiApplication[], idOf: (app: ApiApplication) => string | undefined): ReconcilePlan {
  const known = new Set(tracked.map((k) => k.id));
  const found = new Map<string, ApiApplication>();
  for (const app of apps) {
    const id = idOf(app);
    if (id && !known.has(id) && !found.has(id) && !TERMINAL_STATES.has(app.state)) found.set(id, app);
  }
  // A tracked kernel is judged by its own application (by name): labels copied onto another
  // application, by anyone who may submit, must not make a kernel look gone or ended.
  const byName = new Map(apps.map((app) => [app.appName, app]));
  const gone: ReconcilePlan['gone'] = [];
  for (const kernel of tracked) {
    if (kernel.appName === '' || kernel.ending) continue;
    const app = byName.get(kernel.appName);
    if (!app) gone.push({ id: kernel.id, reason: `application ${kernel.appName} no longer exists` });
    else if (TERMINAL_STATES.has(app.state)) gone.push({ id: kernel.id, reason: `application ${app.appName} is ${app.state}${app.stateDetail ? ` (${app.stateDetail})` : ''}` });
  }
  return { found: [...found.values()], gone };
}
