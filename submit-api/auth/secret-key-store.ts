// API keys kept in a Kubernetes Secret (data key `keys.json`, the same JSON as FileKeyStore's
// file, so a file made by `keys create --data-dir` can be put in the Secret and back).
//
// verify() answers from an in-memory copy of the Secret, kept current by an informer on that one
// Secret (list with fieldSelector metadata.name=NAME, then watch from the list's
// resourceVersion; restarted with backoff after errors, cluster/kubernetes/informers.ts): verification never waits on the apiserver, and a revocation reaches every
// replica as soon as the watch delivers it (milliseconds), not after the kubelet's sync of a
// mounted volume (a minute or so). When the Secret is absent, or its keys.json is not a keys
// file, every key is refused (fail closed) and the log callback says so once.
//
// create/revoke/list go to the apiserver itself (they need no start()): a read, then a replace
// carrying the resourceVersion read, so a concurrent writer makes the apiserver answer 409 and
// the change is made again on what that writer left (nothing is lost). Keys other than
// keys.json (gateway.key) are kept.
//
// RBAC: list and watch are authorized against resourceNames when the request carries a
// fieldSelector metadata.name=NAME, which is all this store sends; a verifying replica needs
// get, list, watch on this one Secret (manifests/chart/templates/rbac.yaml), nothing more.
import type { CoreV1Api, KubeConfig, V1Secret } from '@kubernetes/client-node';
import { statusCode } from '../../cluster/kubernetes/errors.js';
import { type ResilientInformer, resilientInformer } from '../../cluster/kubernetes/informers.js';
import { backoff, retry } from '../../lib/retry.js';
import {
  type ApiKeyIdentity, type CreatedKey, identityById, indexByHash, type KeyInfo, keyInfos, type KeyRevocations, newKey, parseKeys,
  RevocationNotifier, revokeIn, type Role, serializeKeys, type StoredKey, verifyIn,
} from './key-store.js';

export const SECRET_DATA_KEY = 'keys.json';

export interface SecretKeyStoreOptions {
  kc: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  name: string;
  /** Said once per change of state: the Secret went missing or unreadable, or came back. */
  log?: (message: string) => void;
  /** Read-modify-write attempts before giving up on 409s (default 10). */
  attempts?: number;
  /** Unused since the store runs on an informer (restarts back off from 0.2 s to 10 s); kept so callers need not change. */
  reconnectMs?: number;
}


type State =
  | { kind: 'unknown' } // not started (or stopped)
  | { kind: 'absent' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'ready'; byHash: Map<string, StoredKey>; resourceVersion?: string };

export class SecretKeyStore implements KeyRevocations {
  readonly namespace: string;
  readonly name: string;
  private state: State = { kind: 'unknown' };
  private said = ''; // the last state kind reported to log(), so each is said once
  private running = false;
  private informer: ResilientInformer<V1Secret> | undefined;
  private readonly listeners = new Set<() => void>();
  /** Keys valid in one copy and not in the next (revoked, removed, or the Secret gone) are told at once. */
  private readonly revocations = new RevocationNotifier();

  constructor(private readonly options: SecretKeyStoreOptions) {
    this.namespace = options.namespace;
    this.name = options.name;
  }

  /** `namespace/name`, for messages. */
  get ref(): string {
    return `${this.namespace}/${this.name}`;
  }

  /** resourceVersion of the copy verify() answers from; undefined when absent or not started. */
  get resourceVersion(): string | undefined {
    return this.state.kind === 'ready' ? this.state.resourceVersion : undefined;
  }

  /**
   * Lists the Secret (so verify() answers as soon as this resolves; an absent Secret is not an
   * error: verify refuses everything until it appears), then keeps it current with an informer
   * (cluster/kubernetes/informers.ts: list, watch, restarts with backoff). Rejects when the first
   * list fails for any other reason (no access, no apiserver).
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { namespace, name } = this;
    const fieldSelector = `metadata.name=${name}`;
    const informer = resilientInformer<V1Secret>(this.options.kc, `Secret ${this.ref}`, `/api/v1/namespaces/${namespace}/secrets`,
      () => this.options.core.listNamespacedSecret({ namespace, fieldSelector }), { fieldSelector, log: this.options.log });
    informer.informer.on('add', (secret) => this.apply(secret));
    informer.informer.on('update', (secret) => this.apply(secret));
    informer.informer.on('delete', () => this.apply(undefined));
    try {
      await informer.start();
    } catch (error) {
      this.running = false;
      throw error;
    }
    this.informer = informer;
    if (!informer.informer.get(name, namespace)) this.apply(undefined);
  }

  /** Ends the watch; verify() refuses everything afterwards. */
  async stop(): Promise<void> {
    this.running = false;
    await this.informer?.stop();
    this.informer = undefined;
    this.state = { kind: 'unknown' };
  }

  /** Called after every change the watch (or a relist) applied; for tests and metrics. Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Told the id of every key that stops being valid in the watched copy (the watch's latency, milliseconds). */
  onRevoked(listener: (keyId: string) => void): () => void {
    return this.revocations.onRevoked(listener);
  }

  /** The key's identity when the watched copy knows it and it isn't revoked; never waits on the apiserver. */
  verify(key: string): ApiKeyIdentity | undefined {
    if (this.state.kind !== 'ready') return undefined; // absent, unreadable or not started: fail closed
    return verifyIn(this.state.byHash, key);
  }

  /** Key `id`'s identity in the watched copy when it exists and isn't revoked. */
  byId(id: string): ApiKeyIdentity | undefined {
    if (this.state.kind !== 'ready') return undefined;
    return identityById([...this.state.byHash.values()], id);
  }

  /** Issues a key; its hash goes into the Secret (created when absent). */
  async create(role: Role, label?: string): Promise<CreatedKey> {
    const { entry, created } = newKey(role, label);
    await this.update((keys) => { keys.push(entry); return true; }, true);
    return created;
  }

  /** The keys as the apiserver has them now (not the watched copy), without hashes. */
  async list(): Promise<KeyInfo[]> {
    const secret = await this.read();
    return secret ? keyInfos(this.keysOf(secret)) : [];
  }

  /** True when an active key was revoked now; false when unknown or already revoked. */
  async revoke(id: string): Promise<boolean> {
    let revoked = false;
    await this.update((keys) => (revoked = revokeIn(keys, id)), false);
    return revoked;
  }

  // ---- writes -----------------------------------------------------------------------------

  private async read(): Promise<V1Secret | undefined> {
    try {
      return await this.options.core.readNamespacedSecret({ namespace: this.namespace, name: this.name });
    } catch (error) {
      if (statusCode(error) === 404) return undefined;
      throw error;
    }
  }

  private keysOf(secret: V1Secret): StoredKey[] {
    const encoded = secret.data?.[SECRET_DATA_KEY];
    if (encoded === undefined) return []; // a Secret without keys.json yet: no keys
    return parseKeys(Buffer.from(encoded, 'base64').toString('utf8'), `Secret ${this.ref} ${SECRET_DATA_KEY}`);
  }

  /**
   * Read, change, write back conditionally on the resourceVersion read; on 409 (another
   * writer came first, or created the Secret first) start again from what is stored now.
   * `change` returns false when there is nothing to write. `createIfAbsent`: create the
   * Secret when it doesn't exist (else an absent Secret is just "no keys").
   */
  private async update(change: (keys: StoredKey[]) => boolean, createIfAbsent: boolean): Promise<void> {
    // 409: another writer came first (or created the Secret first): start again from what is
    // stored now, after a short random wait that spreads racing writers.
    await retry(async () => {
      const secret = await this.read();
      const keys = secret ? this.keysOf(secret) : [];
      if (!change(keys)) return;
      if (!secret && !createIfAbsent) return;
      const data = { [SECRET_DATA_KEY]: Buffer.from(serializeKeys(keys), 'utf8').toString('base64') };
      if (!secret) {
        await this.options.core.createNamespacedSecret({
          namespace: this.namespace,
          body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: this.name, namespace: this.namespace }, type: 'Opaque', data },
        });
      } else {
        await this.options.core.replaceNamespacedSecret({
          namespace: this.namespace,
          name: this.name,
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            // resourceVersion makes the replace conditional: 409 when someone wrote since the read.
            metadata: { ...secret.metadata, name: this.name, namespace: this.namespace, resourceVersion: secret.metadata?.resourceVersion },
            type: secret.type,
            data: { ...secret.data, ...data },
          },
        });
      }
    }, { attempts: this.options.attempts ?? 10, retryOn: (error) => statusCode(error) === 409, delayMs: backoff({ baseMs: 20, maxMs: 500 }) });
  }

  // ---- the watched copy -------------------------------------------------------------------

  private apply(secret: V1Secret | undefined): void {
    if (!secret) {
      this.setState({ kind: 'absent' });
    } else {
      try {
        const keys = this.keysOf(secret);
        this.setState({ kind: 'ready', byHash: indexByHash(keys), resourceVersion: secret.metadata?.resourceVersion });
      } catch (error) {
        this.setState({ kind: 'invalid', reason: (error as Error).message });
      }
    }
    // Absent or unusable: every key is refused now, so every key's connections end too (fail closed).
    this.revocations.update(this.state.kind === 'ready' ? this.state.byHash.values() : []);
    for (const listener of this.listeners) listener();
  }

  private setState(state: State): void {
    this.state = state;
    if (state.kind === this.said) return;
    const log = this.options.log;
    if (state.kind === 'absent') log?.(`API key Secret ${this.ref} does not exist: every API key is refused until it does`);
    else if (state.kind === 'invalid') log?.(`API key Secret ${this.ref} is not usable (${state.reason}): every API key is refused until it is fixed`);
    else if (state.kind === 'ready' && this.said) log?.(`API key Secret ${this.ref} is readable again: keys are checked against it`);
    this.said = state.kind;
  }
}
