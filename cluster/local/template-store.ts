// Config templates of local mode: one JSON file each under <data-dir>/templates
// (json-file-store.ts), held in memory so that admission looks them up synchronously.
import type { ApplicationConfig, ConfigTemplate } from '../../schemas/index.js';
import type { WriteFileAtomic } from '../../lib/atomic-file.js';
import type { TemplateStore } from '../cluster.js';
import { JsonFileStore } from './json-file-store.js';
import type { LocalLogger } from './logger.js';

export interface TemplateStoreOptions {
  log: LocalLogger;
  /** Where writes go; tests inject failures here. */
  writeFile?: WriteFileAtomic;
}

export class FileTemplateStore implements TemplateStore {
  private readonly files: JsonFileStore<ConfigTemplate>;

  constructor(dir: string, options: TemplateStoreOptions) {
    this.files = new JsonFileStore(dir, {
      ...options,
      kind: 'config template',
      nameOf: (template) => template.name,
      isWhole: (template) => typeof template?.name === 'string' && typeof template.config === 'object' && template.config !== null,
    });
  }

  /** Synchronous lookup for admission. */
  lookup = (name: string): ApplicationConfig | undefined => this.files.get(name)?.config;

  async list(): Promise<ConfigTemplate[]> {
    return this.files.all();
  }

  async get(name: string): Promise<ConfigTemplate | undefined> {
    return this.files.get(name);
  }

  create(template: ConfigTemplate): Promise<ConfigTemplate> {
    return this.files.create(template);
  }

  async replace(template: ConfigTemplate): Promise<ConfigTemplate> {
    return (await this.files.update(template.name, () => template))!;
  }

  delete(name: string): Promise<boolean> {
    return this.files.delete(name);
  }
}
