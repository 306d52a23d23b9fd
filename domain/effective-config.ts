// request -> effective config: template merged with overrides (overrides win),
// defaults filled in, pods sized (a Connect server's jars and interceptors: both sides' lists,
// connect-gate.ts). One function for the API, local mode and the webhook.
import type { ApplicationConfig, UnschedulableError } from '../schemas/index.js';
import { withConnectServerLists } from './connect-gate.js';
import { applyDefaults } from './defaults.js';
import { deepMerge } from './merge.js';
import type { AdmissionRules } from './rules.js';
import { sizeApplication } from './sizing.js';

export type TemplateLookup = (name: string) => ApplicationConfig | undefined;

export type ConfigResult =
  | { ok: true; config: ApplicationConfig }
  | { ok: false; status: 400; body: { message: string; field: string } }
  | { ok: false; status: 404; body: { message: string; code: 'TEMPLATE_NOT_FOUND' } }
  | { ok: false; status: 422; body: UnschedulableError };

export function effectiveConfig(
  templateName: string | undefined,
  overrides: ApplicationConfig | undefined,
  rules: AdmissionRules,
  templates: TemplateLookup,
): ConfigResult {
  let base: ApplicationConfig | undefined;
  if (templateName) {
    base = templates(templateName);
    if (!base) {
      return { ok: false, status: 404, body: { message: `config template "${templateName}" does not exist`, code: 'TEMPLATE_NOT_FOUND' } };
    }
  }
  const merged = withConnectServerLists(deepMerge<ApplicationConfig>(base ?? {}, overrides ?? {}), base, overrides);
  const sized = sizeApplication(applyDefaults(merged, rules), rules);
  return sized.ok ? { ok: true, config: sized.config } : { ok: false, status: 422, body: sized.error };
}
