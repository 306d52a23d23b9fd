// `submission-service keys create|list|revoke`: issue and withdraw API keys.
// It writes the same keys.json the API reads; the API notices the change on its next request.
// With --secret NAMESPACE/NAME (and --kubeconfig FILE, else the default kubeconfig or the
// in-cluster config) the keys.json is the one in that Kubernetes Secret: every API replica
// watching it (`api --keys-secret`) sees the change within the watch's latency.
import { parseArgs } from 'node:util';
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

type OptionSpec = Record<string, { type: 'string' }>;
const WHERE: OptionSpec = { 'data-dir': { type: 'string' }, secret: { type: 'string' }, kubeconfig: { type: 'string' } };

/** node:util parseArgs, its errors said as usage errors (`unknown option --x`, `--x needs a value`). */
function parse(args: string[], options: OptionSpec): { values: Record<string, string | undefined>; positionals: string[] } {
  let parsed: { values: Record<string, string | boolean | (string | boolean)[] | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: { ...WHERE, ...options }, allowPositionals: true, strict: true });
  } catch (error) {
    const option = /'(--?[\w-]+)/.exec((error as Error).message)?.[1];
    const code = (error as { code?: string }).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option ${option ?? ''}`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new UsageError(`${option ?? 'an option'} needs a value`);
    throw new UsageError((error as Error).message);
  }
  const values: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === '') throw new UsageError(`--${name} needs a value`);
    values[name] = value as string | undefined;
  }
  return { values, positionals: parsed.positionals };
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
/** `dataDir`: where keys.json is unless --data-dir or --secret says otherwise. */
export async function keysCommand(argv: string[], dataDir: string, io: KeysIO = processIO): Promise<number> {
  // Accept the argv with or without the leading `keys` word.
  const args = argv[0] === 'keys' ? argv.slice(1) : argv;
  if (args.length === 0 || ['help', '--help', '-h'].includes(args[0])) {
    (args.length === 0 ? io.err : io.out)(USAGE);
    return args.length === 0 ? 2 : 0;
  }
  try {
    // The command is the first positional: options may come before it (`keys --data-dir D list`).
    const sub = parse(args, { role: { type: 'string' }, label: { type: 'string' } }).positionals[0];
    if (sub === undefined) throw new UsageError('which keys command? create, list or revoke');
    if (!['create', 'list', 'revoke'].includes(sub)) throw new UsageError(`unknown keys command "${sub}"`);
    const parsed = parse(args, sub === 'create' ? { role: { type: 'string' }, label: { type: 'string' } } : {});
    const { values } = parsed;
    const positionals = parsed.positionals.slice(1);
    if (values.kubeconfig && !values.secret) throw new UsageError('--kubeconfig goes with --secret NAMESPACE/NAME');
    const store: KeyAdmin = values.secret ? await secretStore(values.secret, values.kubeconfig) : new FileKeyStore(values['data-dir'] ?? dataDir);
    switch (sub) {
      case 'create': {
        if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
        const role = values.role;
        if (!role) throw new UsageError('keys create needs --role user|admin');
        if (!ROLES.includes(role as Role)) throw new UsageError(`--role must be user or admin, not "${role}"`);
        const created = await store.create(role as Role, values.label);
        // The key alone on stdout, so `KEY=$(submission-service keys create ...)` just works.
        io.out(created.key + '\n');
        io.err(`Created ${created.role} key ${created.id}. It is shown only this once: store it now.\n`);
        return 0;
      }
      case 'list': {
        if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
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
        const ids = positionals;
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
