// Paths under an application's one Spark UI link, mapped onto Spark's History Server once the
// driver has ended. The live UI's own paths (/jobs/, /stages/stage/?id=1 …) reach the same pages
// of the run's history, so a page left open at the end keeps working; the History Server's own
// links (it writes them under our prefix, from X-Forwarded-Context) pass as they are. Nothing
// of another run, nor the server's list of every run, is reachable through an application's link.

/** A path segment that would climb out of the run's pages once the server normalised it. */
const UNSAFE_SEGMENT = /(^|\/)\.\.?(\/|$)/;

function decodedOrUndefined(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/**
 * The History Server path for `rest` (the raw path after `/dashboard/apps/{appName}/spark-ui`,
 * starting with `/`) of the run `sparkAppId`; undefined when it is not a page of that run.
 */
export function historyPath(rest: string, sparkAppId: string): string | undefined {
  const decoded = decodedOrUndefined(rest);
  // Encoded slashes or dots would be judged here as one thing and served by Jetty as another.
  if (decoded === undefined || UNSAFE_SEGMENT.test(decoded) || /%2f|%5c|\\/i.test(rest)) return undefined;
  const run = `/history/${sparkAppId}`;
  const own = (prefix: string) => decoded === prefix || decoded.startsWith(`${prefix}/`);
  if (decoded === '/' || decoded === '') return `${run}/jobs/`;
  if (decoded.startsWith('/static/')) return rest;
  if (own(run)) return rest;
  if (own(`/api/v1/applications/${sparkAppId}`) || decoded === '/api/v1/version') return rest;
  // Another run's pages, the list of all runs, the server's other endpoints.
  if (own('/history') || own('/api') || decoded.startsWith('/history/')) return undefined;
  return `${run}${rest}`;
}

/**
 * Whether `rest` asks for the History Server's list of every run: Spark's scripts do on a page
 * whose path does not name its run (the live UI's paths, e.g. `/stages/stage/?id=0`) to learn
 * the run's id. The link answers it with its own run only (history-ui.ts).
 */
export const isRunList = (rest: string): boolean => /^\/api\/v1\/applications\/?$/.test(rest);
