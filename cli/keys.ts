// `submission-service keys create|list|revoke`: issue and withdraw API keys.
// It writes the same keys.json the API reads; the API notices the change on its next request.
import { FileKeyStore, ROLES, type Role } from '../submit-api/auth/key-store.js';

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
  const store = new FileKeyStore(dataDir);
  try {
    switch (sub) {
      case 'create': {
        const { options, rest: extra } = parseArgs(rest, ['role', 'label']);
        if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
        const role = options.get('role');
        if (!role) throw new UsageError('keys create needs --role user|admin');
        if (!ROLES.includes(role as Role)) throw new UsageError(`--role must be user or admin, not "${role}"`);
        const created = store.create(role as Role, options.get('label'));
        // The key alone on stdout, so `KEY=$(submission-service keys create ...)` just works.
        io.out(created.key + '\n');
        io.err(`Created ${created.role} key ${created.id}. It is shown only this once: store it now.\n`);
        return 0;
      }
      case 'list': {
        const { rest: extra } = parseArgs(rest, []);
        if (extra.length) throw new UsageError(`unexpected argument "${extra[0]}"`);
        const keys = store.list();
        if (keys.length === 0) {
          io.err('No keys yet. Create one with: keys create --role user|admin\n');
          return 0;
        }
        const rows = keys.map((k) => [k.id, k.role, k.label ?? '', k.createdAt, k.revokedAt ?? '']);
        io.out(table([['ID', 'ROLE', 'LABEL', 'CREATED', 'REVOKED'], ...rows]));
        return 0;
      }
      case 'revoke': {
        const { rest: ids } = parseArgs(rest, []);
        if (ids.length !== 1) throw new UsageError('keys revoke needs exactly one key ID (see: keys list)');
        const id = ids[0];
        if (store.revoke(id)) {
          io.err(`Revoked key ${id}; it is refused from now on.\n`);
          return 0;
        }
        const known = store.list().find((k) => k.id === id);
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
