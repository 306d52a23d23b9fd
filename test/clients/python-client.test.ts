// The Python client (clients/python) against the live service in local mode: its pytest suite
// runs in a virtualenv of its own (cached by hash, like scripts/setup.sh's), each pytest test
// reported here as a subtest. Also: its models are what generate_models.py makes from schemas/,
// and its code (and the Airflow provider's) needs no Python newer than the 3.9 they declare.
import { join } from 'node:path';
import t from 'tap';
import { run, runLiveSuite } from '../helpers/pytest.js';
import { pythonClientDir, pythonClientVenv } from '../helpers/python-client-venv.js';

t.test('the client\'s models are what generate_models.py makes from schemas/ today', async (t) => {
  const check = await run('python3', [join(pythonClientDir, 'generate_models.py'), '--check']);
  t.equal(check.code, 0, `clients/python/src/submission_service/models.py is up to date (run python3 clients/python/generate_models.py)\n${check.output}`);
});

t.test('the client and the provider need no Python newer than 3.9 (requires-python)', async (t) => {
  // The suite runs them on a newer Python, where 3.10+ code works: this is what would notice.
  const check = await run('python3', [join(pythonClientDir, 'check_oldest_python.py')]);
  t.equal(check.code, 0, check.output);
  t.match(check.output, /[1-9]\d* files checked for Python 3\.9: 0 finding/, 'it read the packages');
});

t.test('the client\'s pytest suite passes against the live service', async (t) => {
  const venv = await pythonClientVenv();
  await runLiveSuite(t, { python: join(venv, 'bin', 'python'), dir: pythonClientDir, install: [pythonClientDir], minimumCases: 16 });
});
