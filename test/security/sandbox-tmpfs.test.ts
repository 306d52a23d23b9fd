// A sandboxed driver's /tmp and the masks over hidden paths are memory (tmpfs): bounded, so a
// driver cannot take the machine's memory by writing there (found by an audit: bwrap's --tmpfs
// has no size unless given one). The sandbox's own arguments (cluster/local/sandbox.ts) run by
// the real bwrap, with a shell in place of the driver.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { SANDBOX_TMP_BYTES, sandboxArgs } from '../../cluster/local/sandbox.js';
import { tempDir } from '../helpers/temp.js';

const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].find((path) => existsSync(path));

t.test('a sandboxed driver fills neither its /tmp nor a hidden path past their caps', { skip: bwrap ? false : 'needs bubblewrap (scripts/setup.sh installs it)' }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const workDir = join(dataDir, 'work', 'app-1');
  mkdirSync(workDir, { recursive: true });
  const args = sandboxArgs({ bwrap: bwrap!, hidden: [join(root, 'secrets')], readable: [], dataDir }, workDir);
  const inside = (script: string) => spawnSync(bwrap!, [...args, 'sh', '-c', script], { encoding: 'utf8' });
  const mib = SANDBOX_TMP_BYTES / 2 ** 20;
  const tmp = inside(`head -c ${(mib + 16) * 2 ** 20} /dev/zero > /tmp/fill; echo "written $(stat -c %s /tmp/fill)"`);
  t.match(tmp.stderr, /No space left on device/, `/tmp refuses past ${mib} MiB`);
  const written = Number(/written (\d+)/.exec(tmp.stdout)?.[1]);
  t.ok(written <= SANDBOX_TMP_BYTES, `what it holds is at most its cap (${written} bytes)`);
  const small = inside('head -c 1048576 /dev/zero > /tmp/ok && echo fine');
  t.equal(small.stdout.trim(), 'fine', 'a driver still writes into /tmp what Python and the JVM put there');
  const mask = inside(`head -c ${4 * 2 ** 20} /dev/zero > ${dataDir}/fill`);
  t.not(mask.status, 0, 'the mask over the data dir takes no more than a few bytes');
  const work = inside('head -c 1048576 /dev/zero > fill && echo fine');
  t.equal(work.stdout.trim(), 'fine', 'the work dir (its own cap, on disk) is where a driver writes');
});
