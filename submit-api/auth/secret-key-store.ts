// API keys kept in a Kubernetes Secret (data key `keys.json`, the same JSON as FileKeyStore's
// file, so a file made by `keys create --data-dir` can be put in the Secret and back).
//
// verify() answers from an in-memory copy of the Secret, kept current by a watch on that one
// Secret (list with fieldSelector metadata.name=NAME, then watch from the list's
// resourceVersion): verification never waits on the apiserver, and a revocation reaches every
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
import { type CoreV1Api, type KubeConfig, type V1Secret, Watch } from '@kubernetes/client-node';
import { statusCode } from '../../cluster/kubernetes/errors.js';
import {
  type ApiKeyIdentity, type CreatedKey, identityById, indexByHash, type KeyInfo, keyInfos, newKey, parseKeys,
  revokeIn, type Role, serializeKeys, type StoredKey, verifyIn,
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
  /** Pause before the watch reconnects after it ended (default 500 ms; doubles up to 10 s on failures). */
  reconnectMs?: number;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

type State =
  | { kind: 'unknown' } // not started (or stopped)
  | { kind: 'absent' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'ready'; byHash: Map<string, StoredKey>; resourceVersion?: string };

export class SecretKeyStore {
  readonly namespace: string;
  readonly name: string;
  private state: State = { kind: 'unknown' };
  private said = ''; // the last state kind reported to log(), so each is said once
  private running = false;
  private watchAbort: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly listeners = new Set<() => void>();

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
   * error: verify refuses everything until it appears), then keeps it current with a watch that
   * reconnects (list again, watch again) whenever it ends. Rejects when the first list fails
   * for any other reason (no access, no apiserver).
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    let resourceVersion: string;
    try {
      resourceVersion = await this.relist();
    } catch (error) {
      this.running = false;
      throw error;
    }
    this.loop = this.watchLoop(resourceVersion);
  }

  /** Ends the watch; verify() refuses everything afterwards. */
  async stop(): Promise<void> {
    this.running = false;
    this.watchAbort?.abort();
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    this.state = { kind: 'unknown' };
  }

  /** Called after every change the watch (or a relist) applied; for tests and metrics. Returns an unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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
    const attempts = this.options.attempts ?? 10;
    for (let attempt = 1; ; attempt++) {
      const secret = await this.read();
      const keys = secret ? this.keysOf(secret) : [];
      if (!change(keys)) return;
      if (!secret && !createIfAbsent) return;
      const data = { [SECRET_DATA_KEY]: Buffer.from(serializeKeys(keys), 'utf8').toString('base64') };
      try {
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
        return;
      } catch (error) {
        if (statusCode(error) !== 409 || attempt >= attempts) throw error;
        await sleep(Math.random() * 20 * attempt); // spread racing writers a little
      }
    }
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

  /** Lists the one Secret (fieldSelector: list is then authorized by resourceNames); returns the list's resourceVersion. */
  private async relist(): Promise<string> {
    const list = await this.options.core.listNamespacedSecret({ namespace: this.namespace, fieldSelector: `metadata.name=${this.name}` });
    this.apply(list.items.find((s) => s.metadata?.name === this.name));
    return list.metadata?.resourceVersion ?? '';
  }

  private async watchLoop(initialVersion: string): Promise<void> {
    let resourceVersion: string | undefined = initialVersion;
    let pause = this.options.reconnectMs ?? 500;
    while (this.running) {
      let failed = false;
      try {
        resourceVersion ??= await this.relist();
        const ended = await this.watchOnce(resourceVersion);
        // A watch that ended normally (server timeout) resumes from the last version seen;
        // "too old" (410) or an error means list again: events may have been missed.
        resourceVersion = ended.resumeFrom;
        failed = ended.failed;
      } catch {
        resourceVersion = undefined;
        failed = true;
      }
      if (!this.running) break;
      pause = failed ? Math.min(pause * 2, 10_000) : this.options.reconnectMs ?? 500;
      // Until the watch is back, the copy stays as last seen (a revocation made meanwhile counts
      // once the relist or the resumed watch delivers it).
      await new Promise<void>((ok) => { this.wake = ok; setTimeout(ok, failed ? pause : 0); });
      this.wake = undefined;
    }
  }

  private watchOnce(resourceVersion: string): Promise<{ resumeFrom: string | undefined; failed: boolean }> {
    return new Promise((resolve, reject) => {
      let last: string | undefined = resourceVersion;
      let gone = false;
      const watch = new Watch(this.options.kc);
      watch.watch(
        `/api/v1/namespaces/${this.namespace}/secrets`,
        { fieldSelector: `metadata.name=${this.name}`, resourceVersion, allowWatchBookmarks: true },
        (phase: string, object: V1Secret & { code?: number }) => {
          if (phase === 'ERROR') {
            gone = true; // typically 410 Gone: the version is too old; relist
            return;
          }
          last = object.metadata?.resourceVersion ?? last;
          if (phase === 'BOOKMARK') return;
          if (object.metadata?.name !== this.name) return;
          this.apply(phase === 'DELETED' ? undefined : object);
        },
        (error: unknown) => resolve(gone || error ? { resumeFrom: undefined, failed: Boolean(error) } : { resumeFrom: last, failed: false }),
      ).then((abort) => {
        this.watchAbort = abort;
        if (!this.running) abort.abort();
      }, reject);
    });
  }
}
