// Several test files of the fast tier in one process (scripts/test-unit.ts starts a few of these):
// a file's own process spends most of its second of CPU loading tsx and tap, and this tier's
// files are short. Each file is imported in turn; its top-level tests queue on tap's one root and
// run in order, named "FILE > test" so that a failure says where it is. The tier's files keep no
// root-level hooks or global state between their tests (fake timers are restored in teardown),
// which is what lets them share a process. The files come in TEST_UNIT_FILES (one a line), not as
// arguments: tap names a test's fixture folder after the process's arguments.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

let current = '';
const test = t.test.bind(t) as (...args: unknown[]) => ReturnType<typeof t.test>;
// Only the name changes; options and the test function go through as they are.
t.test = ((name: unknown, ...rest: unknown[]) => test(typeof name === 'string' ? `${current} > ${name}` : name, ...rest)) as typeof t.test;

for (const file of (process.env.TEST_UNIT_FILES ?? '').split('\n').filter(Boolean)) {
  current = file;
  await import(pathToFileURL(resolve(file)).href);
}
