import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { keysCommand } from '../../cli/keys.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';

// Runs the command with its output captured.
async function run(argv: string[], dataDir: string) {
  let out = '';
  let err = '';
  const code = await keysCommand(argv, dataDir, { out: (s) => void (out += s), err: (s) => void (err += s) });
  return { code, out, err };
}

t.test('create prints a key that verifies; list; revoke', async (t) => {
  const dir = t.testdir();
  const created = await run(['create', '--role', 'admin', '--label', 'ops team'], dir);
  t.equal(created.code, 0);
  t.match(created.out, /^ssk_\S+\n$/, 'the key alone on one line');
  t.match(created.err, /only/i, 'says it is shown only once');
  const key = created.out.trim();
  const store = new FileKeyStore(dir);
  const id = store.verify(key)?.id;
  t.same(store.verify(key), { id, role: 'admin' });

  const user = await run(['keys', 'create', '--role=user'], dir); // leading `keys` accepted
  t.equal(user.code, 0);

  const list = await run(['list'], dir);
  t.equal(list.code, 0);
  const lines = list.out.trimEnd().split('\n');
  t.match(lines[0], /^ID\s+ROLE\s+LABEL\s+CREATED\s+REVOKED$/);
  t.equal(lines.length, 3);
  t.match(lines[1], new RegExp(`^${id}\\s+admin\\s+ops team\\s+\\d{4}-`));
  t.notOk(list.out.includes(key), 'list never shows keys');

  const revoke = await run(['revoke', id!], dir);
  t.equal(revoke.code, 0);
  t.equal(store.verify(key), undefined, 'revoked key refused by an existing store');
  t.match((await run(['list'], dir)).out, new RegExp(`${id}.*admin.*\\d{4}-.*\\d{4}-`), 'list shows when');
  t.equal((await run(['revoke', id!], dir)).code, 0, 'revoking again is harmless');
  const unknown = await run(['revoke', 'nope'], dir);
  t.equal(unknown.code, 1);
  t.match(unknown.err, /No key with ID "nope"/);
});

t.test('empty list', async (t) => {
  const res = await run(['list'], t.testdir());
  t.equal(res.code, 0);
  t.equal(res.out, '');
  t.match(res.err, /No keys/);
});

t.test('bad usage exits 2 with a clear message', async (t) => {
  const dir = t.testdir();
  const cases: [string[], RegExp][] = [
    [[], /usage:/],
    [['frobnicate'], /unknown keys command "frobnicate"/],
    [['create'], /needs --role/],
    [['create', '--role'], /--role needs a value/],
    [['create', '--role', 'root'], /--role must be user or admin/],
    [['create', '--role', 'user', '--colour', 'red'], /unknown option --colour/],
    [['create', '--role', 'user', 'extra'], /unexpected argument "extra"/],
    [['list', 'more'], /unexpected argument/],
    [['revoke'], /exactly one key ID/],
    [['revoke', 'a', 'b'], /exactly one key ID/],
  ];
  for (const [argv, message] of cases) {
    const res = await run(argv, dir);
    t.equal(res.code, 2, `exit 2: keys ${argv.join(' ')}`);
    t.match(res.err, message);
    t.equal(res.out, '');
  }
  t.same(new FileKeyStore(dir).list(), [], 'nothing created');
  const help = await run(['--help'], dir);
  t.equal(help.code, 0);
  t.match(help.out, /usage:/);
});

t.test('a revocation from a separate process is seen by a running store', async (t) => {
  const dir = t.testdir();
  const store = new FileKeyStore(dir);
  const { id, key } = store.create('user');
  t.ok(store.verify(key));
  // With -e, process.argv is [node, ...args].
  const script = `import { keysCommand } from ${JSON.stringify(new URL('../../cli/keys.ts', import.meta.url).href)};
    process.exitCode = await keysCommand(process.argv.slice(1), ${JSON.stringify(dir)});`;
  await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, 'revoke', id]);
  t.equal(store.verify(key), undefined);
});

t.test('--data-dir anywhere on the line, before or after the command', async (t) => {
  const other = t.testdir();
  const created = await run(['--data-dir', other, 'create', '--role', 'user'], '/nonexistent-default');
  t.equal(created.code, 0, created.err);
  t.ok(new FileKeyStore(other).verify(created.out.trim()), 'written to the --data-dir given first');
  const listed = await run(['list', `--data-dir=${other}`], '/nonexistent-default');
  t.equal(listed.code, 0);
  t.equal(listed.out.trim().split('\n').length, 2, 'header and the one key');
  const wrong = await run(['list', '--role', 'user', '--data-dir', other], '/nonexistent-default');
  t.equal(wrong.code, 2);
  t.match(wrong.err, /unknown option --role/, 'options of create only with create');
});
