// Config templates of local mode: files in the data directory, cached in memory so that
// admission looks them up synchronously.
//
// Changes to one template are serialised (create, replace, delete in the order they came):
// without that, a PUT racing a DELETE could land its file after the DELETE removed it, and
// the template came back at the next start. The cache changes only once the disk did.
import { readdirSync, readFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApplicationConfig, ConfigTemplate } from '../../schemas/index.js';
import { isTempFile, makePrivateDir, removeTempFiles, setAside, writeFileAtomic, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { ConflictError, NotFoundError, type TemplateStore } from '../cluster.js';
import type { LocalLogger } from './logger.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';

export interface TemplateStoreOptions {
  log: LocalLogger;
  /** Where writes go; tests inject failures here. */
  writeFile?: WriteFileAtomic;
}

export class FileTemplateStore implements TemplateStore {
  private readonly cache = new Map<string, ConfigTemplate>();
  private readonly changes = new KeyedSerial();
  private readonly writeFile: WriteFileAtomic;

  constructor(private readonly dir: string, options: TemplateStoreOptions) {
    this.writeFile = options.writeFile ?? writeFileAtomic;
    makePrivateDir(dir);
    const stale = removeTempFiles(dir);
    if (stale.length > 0) options.log.warn({ dir, files: stale }, 'removed temp files left by an interrupted write');
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      const path = join(dir, name);
      const template = readTemplate(path);
      if (!template) {
        options.log.error({ file: path, setAsideAs: setAside(path) }, `config template ${path} cannot be read; set aside as ${path}.corrupt`);
        continue;
      }
      this.cache.set(template.name, template);
    }
  }

  /** Synchronous lookup for admission. */
  lookup = (name: string): ApplicationConfig | undefined => this.cache.get(name)?.config;

  async list(): Promise<ConfigTemplate[]> {
    return [...this.cache.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  async get(name: string): Promise<ConfigTemplate | undefined> {
    return this.cache.get(name);
  }

  create(template: ConfigTemplate): Promise<ConfigTemplate> {
    return this.changes.run(template.name, async () => {
      if (this.cache.has(template.name)) throw new ConflictError(`config template "${template.name}" already exists`);
      return this.write(template);
    });
  }

  replace(template: ConfigTemplate): Promise<ConfigTemplate> {
    return this.changes.run(template.name, async () => {
      if (!this.cache.has(template.name)) throw new NotFoundError(`config template "${template.name}" does not exist`);
      return this.write(template);
    });
  }

  delete(name: string): Promise<boolean> {
    return this.changes.run(name, async () => {
      if (!this.cache.has(name)) return false;
      await unlink(this.path(name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      this.cache.delete(name);
      return true;
    });
  }

  private async write(template: ConfigTemplate): Promise<ConfigTemplate> {
    await this.writeFile(this.path(template.name), JSON.stringify(template));
    this.cache.set(template.name, template);
    return template;
  }

  private path(name: string): string {
    return join(this.dir, `${name}.json`);
  }
}

/** undefined for a file that is not a whole template. */
function readTemplate(path: string): ConfigTemplate | undefined {
  try {
    const template = JSON.parse(readFileSync(path, 'utf8')) as ConfigTemplate;
    return typeof template?.name === 'string' && typeof template.config === 'object' && template.config !== null ? template : undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}
