// TESTBED_NODE_FLAGS (testbed/entry.ts): Node's flags for the test bed's processes, before the
// loader and the CLI, so that a bench can run the service under V8's tracing or another heap.
import t from 'tap';
import { testbedArgs, testbedNodeFlags } from '../../testbed/entry.js';

t.test('the flags, split at spaces, blanks dropped; none when unset or blank', async (t) => {
  t.same(testbedNodeFlags({ TESTBED_NODE_FLAGS: '--trace-opt  --max-semi-space-size=32 ' }), ['--trace-opt', '--max-semi-space-size=32']);
  t.same(testbedNodeFlags({}), []);
  t.same(testbedNodeFlags({ TESTBED_NODE_FLAGS: '' }), [], 'an empty value would otherwise be taken for a script');
  t.same(testbedNodeFlags({ TESTBED_NODE_FLAGS: '   ' }), []);
});

t.test('testbedArgs puts them before the loader and the CLI', async (t) => {
  const saved = process.env.TESTBED_NODE_FLAGS;
  t.teardown(() => { if (saved === undefined) delete process.env.TESTBED_NODE_FLAGS; else process.env.TESTBED_NODE_FLAGS = saved; });
  delete process.env.TESTBED_NODE_FLAGS;
  const plain = testbedArgs(['up']);
  t.equal(plain[0], '--import', 'unset: the arguments as before');
  t.equal(plain.at(-1), 'up');
  process.env.TESTBED_NODE_FLAGS = '--no-flush-bytecode';
  t.same(testbedArgs(['up']), ['--no-flush-bytecode', ...plain]);
});
