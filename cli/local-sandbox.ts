// Local mode's answer to "may user code run with the service's rights?": never with `user` keys.
// With `--auth on`, drivers start in a bubblewrap sandbox (cluster/local/sandbox.ts) when this
// machine offers one; when it does not, `user` keys are not served at all: the service refuses
// to start while one exists, and one created while it runs is refused like an unknown key.
import { realpathSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import { type DriverSandbox, findSandbox } from '../cluster/local/sandbox.js';
import type { ApiKeyIdentity, FileKeyStore } from '../submit-api/auth/key-store.js';
import { packageRoot } from '../lib/package-root.js';

export type SandboxMode = 'auto' | 'on' | 'off';

export interface LocalSandboxChoice {
  sandbox?: DriverSandbox;
  /** Why there is none (said at start). */
  problem?: string;
}

/** `--sandbox auto` (default): a sandbox with `--auth on`, none with auth off (one person's machine). */
export function chooseSandbox(mode: SandboxMode, authOn: boolean, setup: { dataDir: string; sparkSubmit: string; python?: string; driverUser?: string }): LocalSandboxChoice {
  if (mode === 'off' || (mode === 'auto' && !authOn)) return { problem: mode === 'off' ? '--sandbox off' : 'auth is off' };
  // The virtualenv with spark-submit and Python, Java and the service's own files (the kernel
  // launcher, the examples) stay readable even when they lie in the service user's home.
  // A virtualenv's python links to the interpreter it was made from (pyenv's is in the home too).
  const prefix = (program: string | undefined) => (program && isAbsolute(program) ? dirname(dirname(program)) : undefined);
  const real = (program: string | undefined) => { try { return program && realpathSync(program); } catch { return undefined; } };
  // Spark 3.5's Connect server jar (scripts/setup.sh) too: a Connect session's driver loads it.
  const readable = [packageRoot, prefix(setup.sparkSubmit), prefix(setup.python), prefix(real(setup.python)), process.env.JAVA_HOME, process.env.SUBMISSION_SERVICE_CONNECT_JARS]
    .filter((p): p is string => Boolean(p));
  const found = findSandbox({ dataDir: setup.dataDir, readable, driverUser: setup.driverUser });
  if (found.ok) return { sandbox: found.sandbox };
  if (mode === 'on') throw new Error(`--sandbox on: ${found.problem}`);
  return { problem: found.problem };
}

/** Active `user` keys other than the gateway's own (which the service itself holds). */
const userKeys = (store: FileKeyStore, ownId: string | undefined) =>
  store.list().filter((k) => k.role === 'user' && !k.revokedAt && k.id !== ownId);

/**
 * Without a sandbox and with auth on, only admin keys (and the gateway's own) are served.
 * Throws at start while a `user` key exists; the returned store refuses one created later.
 */
export function adminOnlyStore(store: FileKeyStore, ownId: string | undefined, problem: string) {
  const others = userKeys(store, ownId);
  if (others.length > 0) {
    throw new Error(`--auth on with user keys (${others.map((k) => k.id).join(', ')}) needs a driver sandbox, and there is none (${problem}). ` +
      'A user key could run code as this service and read its keys and secrets. Install bubblewrap (apt-get install bubblewrap), ' +
      'or revoke the user keys (`submission-service keys revoke ID`): local mode without a sandbox serves admin keys only. See docs/security.md.');
  }
  const allowed = (identity: ApiKeyIdentity | undefined) => (identity && (identity.role === 'admin' || identity.id === ownId) ? identity : undefined);
  return {
    verify: (key: string) => allowed(store.verify(key)),
    byId: (id: string) => allowed(store.byId(id)),
  };
}
