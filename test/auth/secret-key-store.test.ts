// API keys in a Kubernetes Secret, on a real kube-apiserver (the test bed): two store instances
// stand for two API replicas; keys are written through one (or the CLI) and verified by the other
// from its watched copy. Revocation reaches both within the watch's latency (measured), only
// hashes reach the Secret, concurrent writers don't lose each other's keys (409, retried), and a
// deleted Secret refuses every key. Last, the API itself: 401, 201, then 401 after revocation.
import { join } from 'node:path';
import t from 'tap';
import { keysCommand } from '../../cli/keys.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { buildApi } from '../../submit-api/app.js';
import { hashKey } from '../../submit-api/auth/key-store.js';
import { SECRET_DATA_KEY, SecretKeyStore } from '../../submit-api/auth/secret-key-store.js';
import { buildRules } from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { bootstrap, startTestbed } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';

const NAMESPACE = 'submission-service';
const SECRET = 'submission-service-auth';

/**
 * Resolves once `check()` holds, polled on every change the store applies (and right away), with
 * the milliseconds it took (a figure, never a check); rejects after `ms`, a safety net only.
 */
function when(store: SecretKeyStore, check: () => boolean, ms = 120_000): Promise<number> {
  const started = performance.now();
  return new Promise((ok, fail) => {
    if (check()) return ok(0);
    const timer = setTimeout(() => { off(); fail(new Error(`not within ${ms} ms`)); }, ms);
    const off = store.onChange(() => {
      if (!check()) return;
      clearTimeout(timer);
      off();
      ok(performance.now() - started);
    });
  });
}

t.test('API keys in a Secret', async (t) => {
  const dir = tempDir(t, 'subsvc-keysecret-');
  const testbed = await startTestbed(join(dir, 'testbed'));
  t.teardown(() => testbed.stop());
  const clients = kubeClients(testbed.kubeconfig);
  const { core, kc } = clients;
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  // As the chart leaves it: an empty key store, plus the notebook service's own key next to it.
  await core.createNamespacedSecret({
    namespace: NAMESPACE,
    body: { metadata: { name: SECRET }, type: 'Opaque', stringData: { [SECRET_DATA_KEY]: '{"version":1,"keys":[]}', 'gateway.key': 'kept' } },
  });

  const logs: string[] = [];
  const replica = (tag: string) => new SecretKeyStore({ kc, core, namespace: NAMESPACE, name: SECRET, log: (m) => logs.push(`${tag}: ${m}`) });
  const a = replica('a');
  const b = replica('b');
  await a.start();
  await b.start();
  t.teardown(() => Promise.all([a.stop(), b.stop()]));
  const cli = (...args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    return keysCommand([...args, '--kubeconfig', testbed.kubeconfig, '--secret', `${NAMESPACE}/${SECRET}`], join(dir, 'unused'), {
      out: (s) => void out.push(s), err: (s) => void err.push(s),
    }).then((code) => ({ code, out: out.join(''), err: err.join('') }));
  };

  const created = await a.create('user', 'alice');
  const seenInB = await when(b, () => b.verify(created.key) !== undefined);
  await when(a, () => a.verify(created.key) !== undefined);
  t.same(b.verify(created.key), { id: created.id, role: 'user' }, 'the other replica verifies it');
  t.comment(`create on a -> verified by b after ${seenInB.toFixed(1)} ms`);

  t.test('only hashes in the Secret; other keys kept', async (t) => {
    const secret = await core.readNamespacedSecret({ namespace: NAMESPACE, name: SECRET });
    const decoded = Object.values(secret.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')).join('\n');
    t.notOk(decoded.includes(created.key), 'the raw key is nowhere in the data');
    t.notOk(decoded.includes(created.key.slice(4)), 'not even without its prefix');
    const file = JSON.parse(Buffer.from(secret.data![SECRET_DATA_KEY]!, 'base64').toString('utf8'));
    t.match(file, { version: 1, keys: [{ id: created.id, role: 'user', label: 'alice', hash: hashKey(created.key) }] }, 'the file format of FileKeyStore');
    t.equal(Buffer.from(secret.data!['gateway.key']!, 'base64').toString('utf8'), 'kept');
  });

  t.test('the CLI lists and revokes; both replicas refuse', async (t) => {
    const listed = await cli('list');
    t.equal(listed.code, 0);
    t.match(listed.out, new RegExp(`${created.id}\\s+user\\s+alice`));
    t.notOk(listed.out.includes(created.key));

    const started = performance.now();
    const revoked = await cli('revoke', created.id);
    const cliMs = performance.now() - started;
    t.equal(revoked.code, 0, revoked.err);
    const [inA, inB] = await Promise.all([
      when(a, () => a.verify(created.key) === undefined),
      when(b, () => b.verify(created.key) === undefined),
    ]);
    const total = performance.now() - started;
    t.comment(`revocation: refused everywhere ${total.toFixed(1)} ms after the CLI started; CLI (get + replace) ${cliMs.toFixed(1)} ms; refused by a ${(inA + cliMs).toFixed(1)} ms, by b ${(inB + cliMs).toFixed(1)} ms after the CLI started (watch delivery after the CLI returned: a ${inA.toFixed(1)} ms, b ${inB.toFixed(1)} ms)`);
    t.equal((await cli('revoke', created.id)).code, 0, 'revoking again: said already revoked');
    t.equal((await cli('revoke', 'nope')).code, 1);

    const made = await cli('create', '--role', 'admin', '--label', 'from-cli');
    t.equal(made.code, 0, made.err);
    const key = made.out.trim();
    await when(a, () => a.verify(key)?.role === 'admin');
    t.pass('a key created by the CLI verifies on a replica');
  });

  t.test('concurrent creates from two instances both survive (409, retried)', async (t) => {
    // Writers of their own that count the conflicts the apiserver answers.
    let conflicts = 0;
    const counting = Object.create(core) as typeof core;
    counting.replaceNamespacedSecret = (...args: Parameters<typeof core.replaceNamespacedSecret>) =>
      core.replaceNamespacedSecret(...args).catch((error: { code?: number }) => { if (error.code === 409) conflicts++; throw error; });
    const writerA = new SecretKeyStore({ kc, core: counting, namespace: NAMESPACE, name: SECRET });
    const writerB = new SecretKeyStore({ kc, core: counting, namespace: NAMESPACE, name: SECRET });
    const made = await Promise.all([...Array(4)].flatMap((_, i) => [writerA.create('user', `a${i}`), writerB.create('user', `b${i}`)]));
    t.ok(conflicts > 0, `the race happened: ${conflicts} conflicts (409) retried`);
    const ids = new Set((await a.list()).map((k) => k.id));
    t.ok(made.every((k) => ids.has(k.id)), `all ${made.length} racing creates are in the Secret`);
    await when(a, () => made.every((k) => a.verify(k.key)));
    await when(b, () => made.every((k) => b.verify(k.key)));
    t.pass('and verify on both replicas');
  });

  t.test('the API with the Secret store: 401, 201, 401 after revocation', async (t) => {
    const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
    await bootstrap(clients, rules, false);
    const cluster = new KubernetesCluster({ clients, namespace: 'spark-apps' });
    const api = await buildApi({ cluster, auth: { enabled: true, store: b }, logger: false });
    t.teardown(async () => { await api.close(); await cluster.close(); });
    const post = (key: string, name: string) => api.inject({
      method: 'POST', url: '/api/config-templates/', headers: { 'x-api-key': key },
      payload: { name, config: { engineVersion: '3.5.7', executor: { cores: 2, instances: 2 } } },
    });
    t.equal((await post('ssk_unknown', 'before')).statusCode, 401, 'an unknown key: refused');
    const admin = await a.create('admin', 'api-check');
    await when(b, () => b.verify(admin.key) !== undefined);
    t.equal((await post(admin.key, 'nightly')).statusCode, 201, 'delivered: accepted');
    t.equal((await cli('revoke', admin.id)).code, 0);
    await when(b, () => b.verify(admin.key) === undefined);
    t.equal((await post(admin.key, 'after')).statusCode, 401, 'revoked: refused');
  });

  t.test('Secret deleted: fail closed, said once; back when it is recreated', async (t) => {
    const kept = await a.create('user', 'kept');
    await when(a, () => a.verify(kept.key) !== undefined);
    await when(b, () => b.verify(kept.key) !== undefined);
    logs.length = 0;
    await core.deleteNamespacedSecret({ namespace: NAMESPACE, name: SECRET });
    await when(a, () => a.verify(kept.key) === undefined);
    await when(b, () => b.verify(kept.key) === undefined);
    t.equal(a.verify(kept.key), undefined, 'refused by a');
    t.equal(logs.filter((l) => l.startsWith('a: ')).length, 1, 'a says so once');
    t.match(logs.find((l) => l.startsWith('a: ')), /does not exist: every API key is refused/);
    for (let i = 0; i < 3; i++) a.verify(kept.key);
    t.equal(logs.length, 2, 'verifying again says nothing more');

    const fresh = await b.create('admin', 'after-delete'); // create makes the Secret again
    await when(a, () => a.verify(fresh.key) !== undefined);
    t.equal(a.verify(kept.key), undefined, 'the keys of the deleted Secret are gone');
    t.match(logs.at(-1), /readable again/);
  });

  t.test('a store that was never started refuses everything', async (t) => {
    const cold = replica('cold');
    const key = await cold.create('user');
    t.equal(cold.verify(key.key), undefined);
  });

  t.test('unusable keys.json: fail closed', async (t) => {
    const other = await a.create('user', 'x');
    await when(b, () => b.verify(other.key) !== undefined);
    const secret = await core.readNamespacedSecret({ namespace: NAMESPACE, name: SECRET });
    await core.replaceNamespacedSecret({ namespace: NAMESPACE, name: SECRET, body: { ...secret, data: { [SECRET_DATA_KEY]: Buffer.from('{"nope":1}').toString('base64') } } });
    await when(b, () => b.verify(other.key) === undefined);
    t.match(logs.at(-1), /not usable/);
  });
});
