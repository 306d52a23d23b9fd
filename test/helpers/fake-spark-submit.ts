// TEST DOUBLE: a stand-in for `spark-submit`, so tests of the API and the CLI can start
// many "drivers" without launching a JVM. It is a tiny shell script; it does no Spark work.
//
// It reads directives from its own arguments (pass them as the application's `arguments`):
//   lines=N   print N numbered lines "fake line i of N" (default 1)
//   tick=S    sleep S seconds after each line (default 0)
//   sleep=S   sleep S seconds before exiting (default 0), in a child process of the script
//   exit=N    exit with code N (default 0)
// It first prints "fake-spark-submit pid=<its pid> master=<the --master value>".
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SCRIPT = `#!/bin/sh
# TEST DOUBLE for spark-submit (written by test/helpers/fake-spark-submit.ts).
lines=1; tick=0; pause=0; code=0; master=; prev=
for a in "$@"; do
  case "$a" in
    lines=*) lines=\${a#lines=} ;;
    tick=*) tick=\${a#tick=} ;;
    sleep=*) pause=\${a#sleep=} ;;
    exit=*) code=\${a#exit=} ;;
  esac
  [ "$prev" = "--master" ] && master=$a
  prev=$a
done
echo "fake-spark-submit pid=$$ master=$master"
i=1
while [ "$i" -le "$lines" ]; do
  echo "fake line $i of $lines"
  [ "$tick" != 0 ] && sleep "$tick"
  i=$((i + 1))
done
[ "$pause" != 0 ] && sleep "$pause"
echo "fake-spark-submit exits with $code"
exit "$code"
`;

/** Writes the test double into dir and returns its path. */
export function writeFakeSparkSubmit(dir: string): string {
  const path = join(dir, 'fake-spark-submit');
  writeFileSync(path, SCRIPT);
  chmodSync(path, 0o755);
  return path;
}

/**
 * A directory laid out like the project's virtualenv (bin/spark-submit), holding the test
 * double, for the real CLI: point SUBMISSION_SERVICE_PYTHON_ENV at it and `findSpark()`
 * picks the double up (its bin/python does not exist; the double never needs it).
 */
export function writeFakeSparkEnv(dir: string): string {
  const env = join(dir, 'fake-venv');
  mkdirSync(join(env, 'bin'), { recursive: true });
  writeFileSync(join(env, 'bin', 'spark-submit'), SCRIPT);
  chmodSync(join(env, 'bin', 'spark-submit'), 0o755);
  return env;
}

/** Application config that makes the double behave as told. */
export function fakeJob(directives: { lines?: number; tick?: number; sleep?: number; exit?: number } = {}) {
  return {
    type: 'Python',
    mainApplicationFile: 'local:///fake/job.py',
    arguments: Object.entries(directives).map(([k, v]) => `${k}=${v}`),
  };
}

/**
 * TEST DOUBLE: the fake virtualenv's `python`, which local mode runs a kernel's driver with
 * (python first). It prints the spark-submit options it was given (its `--master local[N]`) and
 * stays up, as a kernel does, until the service stops its process group. No launcher connects:
 * for tests of what a kernel holds while it lives, not of what it runs. Any other use of the
 * virtualenv's python (finding Spark's jars for the UI gate) fails at once, as with none.
 */
export function writeFakeKernelPython(env: string): void {
  const path = join(env, 'bin', 'python');
  writeFileSync(path, '#!/bin/sh\n# TEST DOUBLE for a kernel driver\'s python (test/helpers/fake-spark-submit.ts).\n[ -n "$PYSPARK_SUBMIT_ARGS" ] || exit 1\necho "fake-python $PYSPARK_SUBMIT_ARGS"\nexec sleep 3600\n');
  chmodSync(path, 0o755);
}
