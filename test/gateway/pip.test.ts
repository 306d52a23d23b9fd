// `%pip install` from a cell uses the kernel's own Python (local mode: the project's
// virtualenv). Offline: the cell builds a tiny wheel, installs it into a target directory with
// %pip, and imports it.
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('%pip install from a cell', { skip, timeout: 300_000 }, async (t) => {
  const root = tempDir(t);
  const service = await startService(t, { dataDir: join(root, 'data'), env: sparkEnv() });
  const created = await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'default' });
  t.equal(created.status, 201, created.text);
  const client = await new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${created.json.id}/channels`).open(t);
  const wheel = join(root, 'sstestpkg-1.0-py3-none-any.whl');
  const build = await client.execute([
    'import zipfile',
    `with zipfile.ZipFile(${JSON.stringify(wheel)}, "w") as z:`,
    '    z.writestr("sstestpkg/__init__.py", "VALUE = 7\\n")',
    '    z.writestr("sstestpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: sstestpkg\\nVersion: 1.0\\n")',
    '    z.writestr("sstestpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")',
    '    z.writestr("sstestpkg-1.0.dist-info/RECORD", "")',
  ].join('\n'), 180_000);
  t.equal(build.reply.content.status, 'ok', build.stderr);
  const target = join(root, 'site');
  const pip = await client.execute(`%pip install --no-index --target ${target} ${wheel}`, 120_000);
  t.equal(pip.reply.content.status, 'ok', pip.stderr);
  t.match(pip.stdout, /Successfully installed sstestpkg-1\.0/);
  const imported = await client.execute(`import sys; sys.path.insert(0, ${JSON.stringify(target)})\nimport sstestpkg; sstestpkg.VALUE`);
  t.equal(imported.result, '7', 'the package installed from the cell imports');
  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${created.json.id}`)).status, 204);
});
