// Config templates as ConfigTemplate custom resources: `kubectl get configtemplates` shows them.
import type { ConfigTemplate } from '../../schemas/index.js';
import type { TemplateStore } from '../cluster.js';
import { FIELD_MANAGER, GROUP, type KubeClients, TEMPLATES, VERSION } from './client.js';
import { kubeCall, kubeCallOrAbsent } from './errors.js';

interface TemplateResource {
  apiVersion: string;
  kind: 'ConfigTemplate';
  metadata: { name: string; namespace?: string; resourceVersion?: string };
  spec: { config: ConfigTemplate['config'] };
}

const toTemplate = (r: TemplateResource): ConfigTemplate => ({ name: r.metadata.name, config: r.spec?.config ?? {} });

export class KubernetesTemplateStore implements TemplateStore {
  constructor(private readonly clients: KubeClients, private readonly namespace: string) {}

  private get where() {
    return { group: GROUP, version: VERSION, plural: TEMPLATES, namespace: this.namespace };
  }

  private resource(template: ConfigTemplate, resourceVersion?: string): TemplateResource {
    return {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'ConfigTemplate',
      metadata: { name: template.name, namespace: this.namespace, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { config: template.config },
    };
  }

  private call<T>(what: string, run: () => Promise<T>): Promise<T> {
    return kubeCall(this.clients.server, what, run);
  }

  async list(): Promise<ConfigTemplate[]> {
    const list = await this.call('list config templates', () => this.clients.custom.listNamespacedCustomObject(this.where));
    return ((list as { items: TemplateResource[] }).items ?? []).map(toTemplate).sort((a, b) => a.name.localeCompare(b.name));
  }

  async get(name: string): Promise<ConfigTemplate | undefined> {
    const found = await kubeCallOrAbsent(this.clients.server, `read config template ${name}`, () =>
      this.clients.custom.getNamespacedCustomObject({ ...this.where, name }));
    return found === undefined ? undefined : toTemplate(found as TemplateResource);
  }

  async create(template: ConfigTemplate): Promise<ConfigTemplate> {
    const created = await this.call(`create config template ${template.name}`, () =>
      this.clients.custom.createNamespacedCustomObject({ ...this.where, body: this.resource(template), fieldManager: FIELD_MANAGER }));
    return toTemplate(created as TemplateResource);
  }

  async replace(template: ConfigTemplate): Promise<ConfigTemplate> {
    const current = await this.call(`read config template ${template.name}`, () =>
      this.clients.custom.getNamespacedCustomObject({ ...this.where, name: template.name })) as TemplateResource;
    const replaced = await this.call(`replace config template ${template.name}`, () =>
      this.clients.custom.replaceNamespacedCustomObject({ ...this.where, name: template.name, body: this.resource(template, current.metadata.resourceVersion), fieldManager: FIELD_MANAGER }));
    return toTemplate(replaced as TemplateResource);
  }

  async delete(name: string): Promise<boolean> {
    const deleted = await kubeCallOrAbsent(this.clients.server, `delete config template ${name}`, () =>
      this.clients.custom.deleteNamespacedCustomObject({ ...this.where, name }));
    return deleted !== undefined;
  }
}
