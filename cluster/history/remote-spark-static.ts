// Spark's static files (its UI's scripts, styles and images) from the History Server, for the
// Spark UI proxy's anonymous `/static/…` requests in Kubernetes mode, where the service has no
// Spark of its own (local mode reads its jar: cluster/local/spark-static.ts). A sandboxed page
// fetches them without cookies; they do not depend on the application, so the answer is the
// same for every name and no application is looked up (docs/security.md, "The Spark UI"). The
// chart's History Server always runs, so nothing is started. Kept in memory: Spark ships about
// forty such files, a few MiB in all, and each is asked for again by every page.
import { SPARK_STATIC_PATH } from './spark-static-path.js';

/** Bytes one file may take (Spark's largest, a bundled script, is well below). */
const FILE_CAP = 8 * 1024 * 1024;
/** Files kept: Spark has about forty; a client asking for made-up names fills no more than this. */
const KEPT_FILES = 200;

export interface RemoteSparkStaticOptions {
  /** The History Server's address. */
  server: URL;
  /** Headers the History Server needs from the service (none in the chart). */
  headers?: Record<string, string>;
  /** How long one fetch may take. */
  timeoutMs?: number;
}

export class RemoteSparkStatic {
  private readonly kept = new Map<string, { body: Buffer; contentType: string }>();

  constructor(private readonly options: RemoteSparkStaticOptions) {}

  private serverVersion?: Promise<string | undefined>;

  /**
   * `read`, bound, for Spark `version`: the History Server has its own Spark's files alone, so
   * another version's are not here (cli/kubernetes-history.ts finds those elsewhere).
   */
  readonly reader = async (rest: string, version?: string): Promise<{ body: Buffer; contentType: string } | undefined> =>
    version === undefined || version === await this.version() ? this.read(rest) : undefined;

  /** The History Server's Spark version (`/api/v1/version`), asked until it answered once. */
  version(): Promise<string | undefined> {
    this.serverVersion ??= this.askVersion().then((version) => {
      if (!version) this.serverVersion = undefined;
      return version;
    });
    return this.serverVersion;
  }

  private async askVersion(): Promise<string | undefined> {
    try {
      const response = await fetch(new URL('/api/v1/version', this.options.server), {
        headers: this.options.headers, redirect: 'error', signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      const text = await response.text();
      const spark = response.ok && text.length < 4096 ? (JSON.parse(text) as { spark?: unknown }).spark : undefined;
      return typeof spark === 'string' && /^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(spark) ? spark : undefined;
    } catch {
      return undefined;
    }
  }

  /** The file `rest` names, or undefined: not a plain static path, not there, or over the cap. */
  async read(rest: string): Promise<{ body: Buffer; contentType: string } | undefined> {
    if (!SPARK_STATIC_PATH.test(rest)) return undefined;
    const kept = this.kept.get(rest);
    if (kept) return kept;
    const file = await this.fetch(rest).catch(() => undefined);
    if (file && this.kept.size < KEPT_FILES) this.kept.set(rest, file);
    return file;
  }

  private async fetch(rest: string): Promise<{ body: Buffer; contentType: string } | undefined> {
    const response = await fetch(new URL(rest, this.options.server), {
      headers: this.options.headers, redirect: 'error', signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    const length = Number(response.headers.get('content-length') ?? 0);
    if (response.status !== 200 || length > FILE_CAP) {
      await response.body?.cancel();
      return undefined;
    }
    const body = Buffer.from(await response.arrayBuffer());
    if (body.length > FILE_CAP) return undefined;
    return { body, contentType: response.headers.get('content-type') ?? 'application/octet-stream' };
  }
}
