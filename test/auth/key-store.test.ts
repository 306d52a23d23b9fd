import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore, hashKey } from '../../submit-api/auth/key-store.js';

t.test('create, verify, revoke', async (t) => {
  const store = new FileKeyStore(join(t.testdir(), 'nested', 'data')); // dirs created on demand
  const user = store.create('user', 'notebooks');
  const admin = store.create('admin');
  t.match(user.key, /^ssk_[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url, prefixed');
  t.not(user.key, admin.key);
  t.match(user, { role: 'user', id: String, createdAt: String });
  t.same(store.verify(user.key), { id: user.id, role: 'user' });
  t.same(store.verify(admin.key), { id: admin.id, role: 'admin' });
  t.equal(store.verify(user.key + 'x'), undefined, 'wrong key');
  t.equal(store.verify(''), undefined, 'empty key');
  t.equal(store.verify('ssk_' + 'A'.repeat(1000)), undefined, 'oversized key');

  t.same(store.list().map((k) => [k.id, k.role, k.label]), [[user.id, 'user', 'notebooks'], [admin.id, 'admin', undefined]]);
  t.notOk(store.list().some((k) => 'hash' in k), 'list shows no hashes');

  t.equal(store.revoke(user.id), true);
  t.equal(store.verify(user.key), undefined, 'revoked key refused');
  t.equal(store.revoke(user.id), false, 'already revoked');
  t.equal(store.revoke('nope'), false, 'unknown id');
  t.ok(store.list().find((k) => k.id === user.id)?.revokedAt);
  t.same(store.verify(admin.key), { id: admin.id, role: 'admin' }, 'other keys unaffected');
});

t.test('only hashes on disk, file mode 0600', async (t) => {
  const dir = t.testdir();
  const store = new FileKeyStore(dir);
  const { key } = store.create('admin', 'ops');
  const raw = readFileSync(join(dir, 'keys.json'), 'utf8');
  t.notOk(raw.includes(key), 'raw key absent');
  t.notOk(raw.includes(key.slice(4)), 'not even without its prefix');
  t.ok(raw.includes(hashKey(key)), 'its SHA-256 is there');
  t.equal(statSync(join(dir, 'keys.json')).mode & 0o777, 0o600);
  store.revoke(store.list()[0].id);
  t.equal(statSync(join(dir, 'keys.json')).mode & 0o777, 0o600, 'still 0600 after a rewrite');
});

t.test('a revocation by another instance (another process) counts at once', async (t) => {
  const dir = t.testdir();
  const api = new FileKeyStore(dir);
  const cli = new FileKeyStore(dir);
  t.equal(api.verify('ssk_nothing'), undefined, 'no file yet');
  const k = cli.create('user');
  t.same(api.verify(k.key), { id: k.id, role: 'user' }, 'new key seen');
  t.equal(cli.revoke(k.id), true);
  t.equal(api.verify(k.key), undefined, 'revocation seen immediately');
  const k2 = api.create('user');
  t.same(cli.verify(k2.key), { id: k2.id, role: 'user' }, 'writes keep the other instance\'s changes');
  t.ok(cli.list().find((x) => x.id === k.id)?.revokedAt, 'earlier revocation not lost');
});

t.test('a file it cannot understand fails closed', async (t) => {
  const dir = t.testdir({ 'keys.json': '{"nothing": true}' });
  t.throws(() => new FileKeyStore(dir).verify('ssk_x'), /not a keys file/);
  writeFileSync(join(dir, 'keys.json'), 'garbage');
  t.throws(() => new FileKeyStore(dir).verify('ssk_x'));
});
