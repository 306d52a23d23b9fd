// Spark's static files per version (cluster/local/spark-static.ts): Spark 4 ships other files
// under the same names as 3.5 (Bootstrap 5, other DataTables, its own page scripts), so the
// Spark UI proxy's cookieless /static/ answers give a 4.2.0 run's page 4.2.0's files, each
// version's extracted once into the cache (spark-static-VERSION), the base Spark's (3.5.7) when
// no version is named, and nothing for a version not prepared here.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { LocalSparkStatic } from '../../cluster/local/spark-static.js';
import { SparkEnvs } from '../../cluster/local/spark-envs.js';
import { cacheDir } from '../../lib/cache-dir.js';
import { realSpark } from '../helpers/service.js';

const base = realSpark();
const four = base && await new SparkEnvs({ base }).ready('4.2.0');
const skip = base && four ? false : 'needs the 3.5.7 and 4.2 virtualenvs (SETUP_SPARK_VERSIONS=1 scripts/setup.sh)';
const sparkClass = (sparkSubmit: string) => join(dirname(sparkSubmit), 'spark-class');

t.test('a 4.2.0 run gets Spark 4.2.0\'s static files, a 3.5.7 run (or no version) 3.5.7\'s', { skip }, async (t) => {
  if (!base || !four) return;
  const files = new LocalSparkStatic({
    sparkClass: sparkClass(base.sparkSubmit), python: base.python,
    sparkOf: async (version) => (version === '4.2.0' ? { sparkClass: sparkClass(four.sparkSubmit), python: four.python }
      : version === '3.5.7' ? { sparkClass: sparkClass(base.sparkSubmit), python: base.python } : undefined),
  });
  // flamegraph.js is new in Spark 4; jquery-3.5.1.min.js went (4.x names it jquery.min.js).
  t.ok(await files.read('/static/flamegraph.js', '4.2.0'), '4.2.0: a file only Spark 4 has');
  t.notOk(await files.read('/static/flamegraph.js', '3.5.7'), '3.5.7: not there');
  t.notOk(await files.read('/static/flamegraph.js'), 'no version: the base Spark\'s, 3.5.7');
  t.ok(await files.read('/static/jquery-3.5.1.min.js', '3.5.7'), '3.5.7: its own jQuery');
  t.notOk(await files.read('/static/jquery-3.5.1.min.js', '4.2.0'), '4.2.0: not there');
  // The same name, each version's own bytes, as kept in the cache per version.
  const four_ = await files.read('/static/stagepage.js', '4.2.0');
  const three = await files.read('/static/stagepage.js', '3.5.7');
  const kept = (version: string) => readFileSync(join(cacheDir(), `spark-static-${version}`, 'org', 'apache', 'spark', 'ui', 'static', 'stagepage.js'));
  t.ok(four_ && three && !four_.body.equals(three.body), 'stagepage.js differs between the versions');
  t.ok(four_?.body.equals(kept('4.2.0')), '4.2.0\'s from spark-static-4.2.0');
  t.ok(three?.body.equals(kept('3.5.7')), '3.5.7\'s from spark-static-3.5.7');
  t.match(four_?.contentType, /javascript/);
  t.notOk(await files.read('/static/../../etc/passwd', '4.2.0'), 'no path out of the folder');
  t.notOk(await files.read('/static/webui.js', '4.1.0'), 'a version with no Spark here: nothing (not the base Spark\'s files under its name)');
  t.ok(await files.read('/static/webui.js'), 'no version named: the base Spark\'s');
});
