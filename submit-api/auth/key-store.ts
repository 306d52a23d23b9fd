// API keys kept in <dataDir>/keys.json. Only a SHA-256 hash of each key is stored: whoever reads
// the file (a backup, a debug dump) can't use it to call the API.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type FSWatcher, readFileSync, statSync, unwatchFile, watch, watchFile } from 'node:fs';
import { dirname, join } from 'node:path';
import { makePrivateDir, writeFileAtomicSync } from '../../lib/atomic-file.js';

export type Role = 'user' | 'admin';
export const ROLES: readonly Role[] = ['user', 'admin'];

/** What a request is allowed to know about the key it came with. */
export interface ApiKeyIdentity {
  id: string;
  role: Role;
}

/** Returned once by create(): the only time the key itself is visible. */
export interface CreatedKey extends ApiKeyIdentity {
  key: string;
  createdAt: string;
}

/** What list() shows: everything but the hash. */
export interface KeyInfo extends ApiKeyIdentity {
  createdAt: string;
  label?: string;
  revokedAt?: string;
}

/** One entry of keys.json (the file store and the Secret store share the format). */
export interface StoredKey extends KeyInfo {
  hash: string; // SHA-256 of the key, hex
}

export interface KeysFile {
  version: 1;
  keys: StoredKey[];
}

export const KEY_PREFIX = 'ssk_';
const FILE_NAME = 'keys.json';

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

// Pure helpers shared by FileKeyStore and SecretKeyStore (secret-key-store.ts): the format and
// the rules live here once, the stores only differ in where the keys.json text is kept.

/** A new key and the entry that stores its hash (the key itself is never stored). */
export function newKey(role: Role, label?: string): { entry: StoredKey; created: CreatedKey } {
  if (!ROLES.includes(role)) throw new Error(`unknown role "${String(role)}" (expected user or admin)`);
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  const entry: StoredKey = {
    id: randomBytes(6).toString('hex'),
    role,
    createdAt: new Date().toISOString(),
    hash: hashKey(key),
    ...(label ? { label } : {}),
  };
  return { entry, created: { id: entry.id, key, role, createdAt: entry.createdAt } };
}

/** Marks key `id` revoked in `keys`; true when an active key was revoked now. */
export function revokeIn(keys: StoredKey[], id: string): boolean {
  const entry = keys.find((k) => k.id === id);
  if (!entry || entry.revokedAt) return false;
  entry.revokedAt = new Date().toISOString();
  return true;
}

/** Everything but the hashes. */
export function keyInfos(keys: StoredKey[]): KeyInfo[] {
  return keys.map(({ hash: _hash, ...info }) => info);
}

/** keys.json text, as FileKeyStore writes it. */
export function serializeKeys(keys: StoredKey[]): string {
  const body: KeysFile = { version: 1, keys };
  return JSON.stringify(body, null, 2) + '\n';
}

/**
 * The keys of a keys.json text. Throws on anything else: a store fails closed on a file it
 * doesn't understand rather than treating it as "no keys".
 */
export function parseKeys(text: string, source: string): StoredKey[] {
  const data = JSON.parse(text) as Partial<KeysFile>;
  if (!data || !Array.isArray(data.keys)) throw new Error(`${source}: not a keys file (no "keys" array)`);
  return data.keys;
}

/**
 * The identity of `key` when `byHash` (stored hash -> entry) knows it and it isn't revoked.
 * Looking the hash up in a map is safe from timing attacks: the attacker controls the key, not
 * its SHA-256, so how long a lookup takes says nothing usable about stored hashes (the keys
 * have 256 bits of entropy, so no guessing either). timingSafeEqual then confirms the match in
 * constant time anyway.
 */
export function verifyIn(byHash: ReadonlyMap<string, StoredKey>, key: string): ApiKeyIdentity | undefined {
  if (!key || key.length > 512) return undefined; // no real key is that long; don't hash junk
  const presented = hashKey(key);
  const entry = byHash.get(presented);
  if (!entry) return undefined;
  if (!timingSafeEqual(Buffer.from(presented, 'hex'), Buffer.from(entry.hash, 'hex'))) return undefined;
  if (entry.revokedAt) return undefined;
  return { id: entry.id, role: entry.role };
}

/** The identity of key `id` when it exists and isn't revoked (sessions carry the id, not the key). */
export function identityById(keys: readonly StoredKey[], id: string): ApiKeyIdentity | undefined {
  const entry = keys.find((k) => k.id === id);
  return entry && !entry.revokedAt ? { id: entry.id, role: entry.role } : undefined;
}

export function indexByHash(keys: StoredKey[]): Map<string, StoredKey> {
  return new Map(keys.map((k) => [k.hash, k]));
}

/**
 * A key store that says when keys stop being valid (revoked, or gone from the store), so that
 * whoever holds long-lived connections of a key (event streams, websockets) closes them at once
 * instead of at their next request. Both stores implement it.
 */
export interface KeyRevocations {
  /** Calls `listener` with the id of each key that was valid and no longer is; returns an unsubscribe. */
  onRevoked(listener: (keyId: string) => void): () => void;
}

/**
 * The ids of the valid keys, compared with the last set seen: each id that left is told to the
 * listeners. `watching(true)` when the first listener comes, `watching(false)` when the last goes.
 */
export class RevocationNotifier implements KeyRevocations {
  private valid: Set<string> | undefined;
  private readonly listeners = new Set<(keyId: string) => void>();

  constructor(private readonly watching: (on: boolean) => void = () => {}) {}

  onRevoked(listener: (keyId: string) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.watching(true);
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.watching(false);
    };
  }

  /** The keys as they are now; the first call only sets the baseline. */
  update(keys: Iterable<StoredKey>): void {
    const next = new Set<string>();
    for (const key of keys) if (!key.revokedAt) next.add(key.id);
    const before = this.valid;
    this.valid = next;
    if (!before) return;
    for (const id of before) {
      if (next.has(id)) continue;
      for (const listener of [...this.listeners]) listener(id);
    }
  }
}

export class FileKeyStore implements KeyRevocations {
  readonly path: string;
  // Another process (`keys revoke`) rewrites the file: a watch on the directory (the file is
  // replaced by a rename) reloads it at once while anyone listens for revocations.
  private readonly revocations = new RevocationNotifier((on) => (on ? this.watchFile() : this.unwatch()));
  private watcher: FSWatcher | 'polling' | undefined;
  // Parsed file plus what statSync said about it when read; a different stat means another
  // process (the `keys` CLI) rewrote it and the cache is stale.
  private cache: { stamp: string; byHash: Map<string, StoredKey>; keys: StoredKey[] } | undefined;

  constructor(readonly dataDir: string) {
    this.path = join(dataDir, FILE_NAME);
  }

  create(role: Role, label?: string): CreatedKey {
    const { entry, created } = newKey(role, label);
    this.update((keys) => keys.push(entry));
    return created;
  }

  list(): KeyInfo[] {
    return keyInfos(this.load().keys);
  }

  /** True when an active key was revoked now; false when unknown or already revoked. */
  revoke(id: string): boolean {
    let revoked = false;
    this.update((keys) => { revoked = revokeIn(keys, id); });
    this.load(); // tells the revocation listeners now, not at the next request
    return revoked;
  }

  onRevoked(listener: (keyId: string) => void): () => void {
    this.load(); // the baseline: keys valid now
    return this.revocations.onRevoked(listener);
  }

  /** The key's identity when it is known and not revoked (verifyIn: constant-time compare). */
  verify(key: string): ApiKeyIdentity | undefined {
    return verifyIn(this.load().byHash, key);
  }

  /** Key `id`'s identity when it exists and isn't revoked; re-reads the file when it changed. */
  byId(id: string): ApiKeyIdentity | undefined {
    return identityById(this.load().keys, id);
  }

  // One statSync per call: cheap, and it makes a revocation by another process count at once.
  // Atomic rename gives the file a new inode, so ino catches rewrites even within one mtime tick.
  private load(): { byHash: Map<string, StoredKey>; keys: StoredKey[] } {
    let stamp: string;
    try {
      const st = statSync(this.path);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      stamp = 'missing';
    }
    if (this.cache?.stamp === stamp) return this.cache;
    const keys = stamp === 'missing' ? [] : parseKeys(readFileSync(this.path, 'utf8'), this.path);
    this.cache = { stamp, keys, byHash: indexByHash(keys) };
    this.revocations.update(keys);
    return this.cache;
  }

  private watchFile(): void {
    const reload = () => {
      try {
        this.load();
      } catch {
        // An unreadable file fails every verify() loudly; the watch just waits for the next change.
      }
    };
    try {
      this.watcher = watch(this.dataDir, { persistent: false }, (_event, name) => { if (name === FILE_NAME) reload(); });
      this.watcher.on('error', () => this.unwatch());
    } catch {
      // No directory yet (or no inotify): look once a second instead.
      watchFile(this.path, { persistent: false, interval: 1000 }, reload);
      this.watcher = 'polling';
    }
  }

  private unwatch(): void {
    if (this.watcher === 'polling') unwatchFile(this.path);
    else this.watcher?.close();
    this.watcher = undefined;
  }

  // Read-modify-write from the file as it is now, so changes by another process aren't lost.
  // (Two processes writing in the same instant could still race; key changes are rare and manual.)
  private update(change: (keys: StoredKey[]) => void): void {
    this.cache = undefined; // a write always starts from the file itself, not the cache
    const keys = this.load().keys.map((k) => ({ ...k }));
    change(keys);
    makePrivateDir(dirname(this.path));
    writeFileAtomicSync(this.path, serializeKeys(keys));
  }
}
