// `submission-service keys create|list|revoke`: issue and withdraw API keys.
// It writes the same keys.json the API reads; the API notices the change on its next request.
// With --secret NAMESPACE/NAME (and --kubeconfig FILE, else the default kubeconfig or the
// in-cluster config) the keys.json is the one in that Kubernetes Secret: every API replica
// watching it (`api --keys-secret`) sees the change within the watch's latency.
import { type CreatedKey, FileKeyStore, type KeyInfo, ROLES, type Role } from '../submit-api/auth/key-store.js';
import { parseSecretRef } from './config.js';

/** What the command needs of a store: FileKeyStore answers at once, SecretKeyStore asynchronously. */
export interface KeyAdmin {
  create(role: Role, label?: string): CreatedKey | Promise<CreatedKey>;
  list(): KeyInfo[] | Promise<KeyInfo[]>;
  revoke(id: string): boolean | Promise<boolean>;
}

export interface KeysIO {
  out: (text: string) => void;
  err: (text: string) => void;
}

const processIO: KeysIO = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

const USAGE = `usage:
  keys create --role user|admin [--label LABEL]   issue a key (printed once)
  keys list                                       show keys (never the keys themselves)
  keys revoke ID                                  withdraw a key at once
options (any command):
  --data-dir DIR                                  the keys.json file in DIR (default)
  --secret NAMESPACE/NAME [--kubeconfig FILE]     the keys.json of that Kubernetes Secret instead
`;

class UsageError extends Error {}

/** Splits `--name value` / `--name=value` options from positional arguments. */
function parseArgs(args: string[], known: string[]): { options: Map<string, string>; rest: string[] } {
  const options = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--')) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (!known.includes(name)) throw new UsageError(`unknown option --${name}`);
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
  }
  return { options, rest };
}

/** Takes the options in `names` (`--name value` / `--name=value`) out of `args`, leaving the rest as it was. */
function takeOptions(args: string[], names: string[]): { options: Map<string, string>; rest: string[] } {
  const options = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? arg.slice(2, eq < 0 ? undefined : eq) : '';
    if (!names.includes(name)) {
      rest.push(arg);
      continue;
    }
    const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    options.set(name, value);
  }
  return { options, rest };
}

// Loaded only when used: the Kubernetes client alone costs a second to load.
async function secretStore(ref: string, kubeconfig: string | undefined): Promise<KeyAdmin> {
  let target: { namespace: string; name: string };
  try {
    target = parseSecretRef(ref);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { SecretKeyStore } = await import('../submit-api/auth/secret-key-store.js');
  const { kubeClients } = await import('../cluster/kubernetes/client.js');
  const { kc, core } = kubeClients(kubeconfig);
  return new SecretKeyStore({ kc, core, ...target });
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, col) => Math.max(...rows.map((r) => r[col].length)));
  return rows.map((r) => r.map((cell, col) => cell.padEnd(widths[col])).join('  ').trimEnd()).join('\n') + '\n';
}

/** Returns the exit code: 0 done, 1 failed (e.g. unknown key id), 2 bad usage. */
export async function keysCommand(argv: string[], dataDir: string, io: KeysIO = processIO): Promise<number> {
  // Accept the argv with or without the leading `keys` word.
  const args = argv[0] === 'keys' ? argv.slice(1) : argv;
  const [sub, ...rest] = args;
  if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
    (sub === undefined ? io.err : io.out)(USAGE);
    return sub === undefined ? 2 : 0;
  }
  try {
    const { options: where, rest: remaining } = takeOptions(rest, ['kubeconfig', 'secret']);
    if (where.has('kubeconfig') && !where.has('secret')) throw new UsageError('--kubeconfig goes with --secret NAMESPACE/NAME');
    const store: KeyAdmin = where.has('secret') ? await secretStore(where.get('secret')!, where.get('kubeconfig')) : new FileKeyStore(dataDir);
    switch (sub) {
      case 'create': {
        const { options, rest: extra } = parseArgs(remaining, ['role', 'label']);
        if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
        const role = options.get('role');
        if (!role) throw new UsageError('keys create needs --role user|admin');
        if (!ROLES.includes(role as Role)) throw new UsageError(`--role must be user or admin, not "${role}"`);
        const created = await store.create(role as Role, options.get('label'));
        // The key alone on stdout, so `KEY=$(submission-service keys create ...)` just works.
        io.out(created.key + '\n');
        io.err(`Created ${created.role} key ${created.id}. It is shown only this once: store it now.\n`);
        return 0;
      }
      case 'list': {
        const { rest: extra } = parseArgs(remaining, []);
        if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
        const keys = await store.list();
        if (keys.length === 0) {
          io.err('No keys yet. Create one with: keys create --role user|admin\n');
          return 0;
        }
        const rows = keys.map((k) => [k.id, k.role, k.label ?? '', k.createdAt, k.revokedAt ?? '']);
        io.out(table([['ID', 'ROLE', 'LABEL', 'CREATED', 'REVOKED'], ...rows]));
        return 0;
      }
      case 'revoke': {
        const { rest: ids } = parseArgs(remaining, []);
        if (ids.length !== 1) throw new UsageError('keys revoke needs exactly one key ID (see: keys list)');
        const id = ids[0];
        if (await store.revoke(id)) {
          io.err(`Revoked key ${id}; it is refused from now on.\n`);
          return 0;
        }
        const known = (await store.list()).find((k) => k.id === id);
        if (known) {
          io.err(`Key ${id} was already revoked at ${known.revokedAt}.\n`);
          return 0;
        }
        io.err(`No key with ID "${id}" (see: keys list).\n`);
        return 1;
      }
      default:
        throw new UsageError(`unknown keys command "${sub}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\n${USAGE}`);
      return 2;
    }
    io.err(`error: ${(err as Error).message}\n`);
    return 1;
  }
}
