// Spark's static files of each offered Spark version from a folder the service is given, one
// subfolder per version (`<dir>/<version>/webui.js` …): Kubernetes mode's, where the service has
// no Spark of its own. The chart fills it at the api pod's start from each version's runtime
// image (api.sparkStaticFromImages: an init container per version copies the UI folder out of
// its spark-core jar), so a live 4.2.0 driver's page and the History Server's pages each get
// their own version's files, without asking either (dashboard/spark-ui-static.ts).
import { join } from 'node:path';
import { readStaticFile, type SparkStaticFile } from './spark-static-path.js';

const VERSION = /^\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** The file `rest` (`/static/…`) of Spark `version` under `dir`, or undefined: no such version or file. */
export function readVersionedStatic(dir: string, rest: string, version: string): Promise<SparkStaticFile | undefined> {
  return VERSION.test(version) ? readStaticFile(join(dir, version), rest) : Promise.resolve(undefined);
}
