// The node-pool file as the API and the webhook hold it: read at start, then watched. In the
// chart it is one ConfigMap both processes mount; the kubelet swaps the mounted file atomically
// when it changes, and each process here follows within a poll, so the two places that admit
// pods (the API for its own drivers, the webhook for executors and team pods) hold the same
// policy without a restart. Every pod says which version admitted it (ANNOTATION_POLICY). A
// broken file never replaces good rules: the process keeps the last good ones and says so.
import { createHash } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { AdmissionRules, RulesSource } from '../domain/index.js';
import { parseNodePools } from './config.js';
import { rulesOf } from './rules.js';

export interface WatchedRulesOptions {
  file: string;
  namespace: string;
  placement?: string;
  /** How often the file's stat is compared (default 2 s; a ConfigMap change takes the kubelet up to a minute anyway). */
  pollMs?: number;
  log?: (message: string) => void;
}

/** The content hash that names a policy version: the same file gives the same name in every process. */
export function policyVersionOf(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 12);
}

export class WatchedRules implements RulesSource {
  private rules: AdmissionRules;
  private readonly onChange = () => void this.reload();

  /** Reads the file now: a missing or invalid file at start is an error (the process does not start). */
  constructor(private readonly options: WatchedRulesOptions) {
    this.rules = this.load();
  }

  current(): AdmissionRules {
    return this.rules;
  }

  get version(): string {
    return this.rules.policyVersion!;
  }

  /** Follows the file until close(). */
  watch(): this {
    watchFile(this.options.file, { persistent: false, interval: this.options.pollMs ?? 2000 }, this.onChange);
    return this;
  }

  close(): void {
    unwatchFile(this.options.file, this.onChange);
  }

  /** Reads the file again; true when its rules are now in force (changed or not), false when it was refused. */
  reload(): boolean {
    let next: AdmissionRules;
    try {
      next = this.load();
    } catch (error) {
      this.options.log?.(`policy: kept ${this.version}; ${(error as Error).message}`);
      return false;
    }
    if (next.policyVersion !== this.rules.policyVersion) {
      this.options.log?.(`policy: ${this.rules.policyVersion} -> ${next.policyVersion} (${this.options.file})`);
      this.rules = next;
    }
    return true;
  }

  private load(): AdmissionRules {
    const text = readFileSync(this.options.file, 'utf8');
    return rulesOf(parseNodePools(text, this.options.file), this.options.namespace, this.options.placement, policyVersionOf(text));
  }
}
