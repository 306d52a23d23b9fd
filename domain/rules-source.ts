// Admission rules that may change while a process runs. In the chart the node-pool file is one
// ConfigMap that the API and the webhook both mount and watch (cli/watched-rules.ts): the two
// places that admit pods then hold the same policy, and a change reaches both without a
// restart. A plain AdmissionRules object is a source that never changes (tests, local mode).
import type { AdmissionRules } from './rules.js';

export interface RulesSource {
  current(): AdmissionRules;
}

export type RulesInput = AdmissionRules | RulesSource;

/** The rules in force now. */
export function rulesNow(input: RulesInput): AdmissionRules {
  return 'current' in input && typeof input.current === 'function' ? input.current() : input as AdmissionRules;
}
