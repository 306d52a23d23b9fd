// Where ended pods' logs are kept (Kubernetes mode): one object per container in the object
// store. The controller that fills it is log-archiver.ts; reads of an application's log fall
// back to this once its pod is gone.
import type { Readable } from 'node:stream';
import type { ObjectStore } from '../history/object-store.js';

/** Which pod's log: the driver's, or executor N's (`executor-N`, Spark's executor id). */
export type LogContainer = 'driver' | `executor-${number}`;

export const isLogContainer = (value: string): value is LogContainer => value === 'driver' || /^executor-[1-9][0-9]{0,5}$/.test(value);

/** Where archived logs are: `<prefix>/<appName>/<driver|executor-N>.log` in one bucket. */
export class LogArchive {
  constructor(readonly store: ObjectStore, private readonly prefix: string) {}

  key(appName: string, container: LogContainer): string {
    return `${this.folder(appName)}${container}.log`;
  }

  /** An application's folder, with its slash (app-1/ must not take app-10/). */
  private folder(appName: string): string {
    return `${this.prefix ? `${this.prefix}/` : ''}${appName}/`;
  }

  read(appName: string, container: LogContainer, offset = 0): Promise<Readable | undefined> {
    return this.store.read(this.key(appName, container), offset);
  }

  save(appName: string, container: LogContainer, body: Readable): Promise<number> {
    return this.store.upload(this.key(appName, container), body);
  }

  /** The containers archived for an application (driver first). */
  async containers(appName: string): Promise<LogContainer[]> {
    const base = this.folder(appName);
    const found: LogContainer[] = [];
    for await (const item of this.store.list(base)) {
      const name = 'key' in item ? item.key.slice(base.length).replace(/\.log$/, '') : '';
      if (isLogContainer(name)) found.push(name);
    }
    return found.sort((a, b) => (a === 'driver' ? -1 : b === 'driver' ? 1 : Number(a.slice(9)) - Number(b.slice(9))));
  }

  async remove(appName: string): Promise<void> {
    await this.store.removePrefix(this.folder(appName));
  }
}
