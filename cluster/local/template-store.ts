// Config templates of local mode: files in the data directory, cached in memory so that
// admission looks them up synchronously.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ApplicationConfig, ConfigTemplate } from '../../schemas/index.js';
import { isTempFile, writeFileAtomic } from '../../lib/atomic-file.js';
import { ConflictError, NotFoundError, type TemplateStore } from '../cluster.js';

export class FileTemplateStore implements TemplateStore {
  private readonly cache = new Map<string, ConfigTemplate>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      const template = JSON.parse(readFileSync(join(dir, name), 'utf8')) as ConfigTemplate;
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

  async create(template: ConfigTemplate): Promise<ConfigTemplate> {
    if (this.cache.has(template.name)) throw new ConflictError(`config template "${template.name}" already exists`);
    return this.write(template);
  }

  async replace(template: ConfigTemplate): Promise<ConfigTemplate> {
    if (!this.cache.has(template.name)) throw new NotFoundError(`config template "${template.name}" does not exist`);
    return this.write(template);
  }

  async delete(name: string): Promise<boolean> {
    if (!this.cache.delete(name)) return false;
    await unlink(join(this.dir, `${name}.json`));
    return true;
  }

  private async write(template: ConfigTemplate): Promise<ConfigTemplate> {
    this.cache.set(template.name, template);
    try {
      await writeFileAtomic(join(this.dir, `${template.name}.json`), JSON.stringify(template));
    } catch (error) {
      this.cache.delete(template.name);
      throw error;
    }
    return template;
  }
}
