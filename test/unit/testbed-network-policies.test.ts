// `testbed up --real-node --network-policies` (testbed/serve.ts, cli.ts): the flag starts the
// real node's NetworkPolicy enforcer (kube-router's policy controller, testbed/node-policy.ts),
// is refused without a real node or where the enforcer cannot run, before anything starts.
// test/kubernetes/real-node-netpol.test.ts runs the enforcer itself.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { nodeChoices } from '../../testbed/serve.js';
import { testbedArgs } from '../../testbed/entry.js';
import { repoRoot } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

const flags = (set: Partial<Record<'real-node' | 'run-pods' | 'network-policies', boolean>>) => ({ 'real-node': false, 'run-pods': false, 'network-policies': false, ...set });
const canEnforce = () => undefined;

t.test('--network-policies with --real-node starts the enforcer on the node and gives each application its own policy; without it, the node enforces nothing', async (t) => {
  t.same(nodeChoices(flags({ 'real-node': true, 'network-policies': true }), canEnforce), { realNode: true, enforceNetworkPolicy: true, appNetworkPolicies: true },
    'the bed\'s API then runs as the chart\'s with networkPolicy.enabled');
  t.same(nodeChoices(flags({ 'real-node': true }), () => 'never asked'), { realNode: true, enforceNetworkPolicy: false, appNetworkPolicies: false }, 'the real node alone: no enforcer, and its needs are not checked');
  t.same(nodeChoices(flags({}), () => 'never asked'), { realNode: false, enforceNetworkPolicy: false, appNetworkPolicies: false });
});

t.test('--network-policies is refused without a real node, or where the enforcer cannot run, before anything starts', async (t) => {
  t.throws(() => nodeChoices(flags({ 'network-policies': true }), canEnforce), /--network-policies enforces NetworkPolicy on the real node: it needs --real-node/);
  t.throws(() => nodeChoices(flags({ 'real-node': true, 'network-policies': true }), () => 'enforcing NetworkPolicy needs ipset'), /--network-policies: enforcing NetworkPolicy needs ipset/,
    'the reason node-policy.ts gives');
  t.throws(() => nodeChoices(flags({ 'real-node': true, 'run-pods': true }), canEnforce), /--real-node runs pods itself/);
});

t.test('the command line takes the flag: `testbed up --network-policies` without --real-node fails at once and says why', async (t) => {
  const dir = tempDir(t, 'subsvc-testbed-np-');
  const result = await new Promise<{ code: number | null; stderr: string }>((ok) => {
    const child = spawn(process.execPath, testbedArgs(['up', '--network-policies', '--dir', dir]), { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    child.once('close', (code) => ok({ code, stderr }));
  });
  t.equal(result.code, 1);
  t.notMatch(result.stderr, /Unknown option/, 'the flag is known');
  t.match(result.stderr, /it needs --real-node/);
  t.notOk(existsSync(join(dir, 'testbed')), 'no control plane was started');
});
