// The pure parts behind a kernel's launcher credential and a warm pool kernel's claimer (issue
// 17): the header is accepted only with the gateway's proof; the bare pod gets the Secret
// volume and names only the file; FakeKubelet's Secret volumes (a test double) write the data
// read-only and point the env there; the claimer may act on the application, another key not.
import { mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { gatewayProof, GATEWAY_PROOF_HEADER, LAUNCHER_TOKEN_HEADER } from '../../lib/gateway-proof.js';
import { launcherTokenOf } from '../../submit-api/service-labels.js';
import { materializeSecretVolumes, removeSecretVolumes } from '../../testbed/secret-volumes.js';
import { bareDriverPod, defaultPolicy, KERNEL_CLAIMER_LABEL, mayActOnApplication, withLauncherSecret } from '../../domain/index.js';

const proof = gatewayProof('shared');
const token = 'A'.repeat(32);
/** The HTTP status the call throws (0: none). */
const refusal = (run: () => unknown): number => {
  try { run(); return 0; } catch (error) { return (error as { statusCode?: number }).statusCode ?? -1; }
};

t.test('the launcher token header needs the gateway\'s proof', async (t) => {
  t.equal(launcherTokenOf({}, proof), undefined, 'absent: none');
  t.equal(launcherTokenOf({ [LAUNCHER_TOKEN_HEADER]: token, [GATEWAY_PROOF_HEADER]: proof }, proof), token);
  t.equal(refusal(() => launcherTokenOf({ [LAUNCHER_TOKEN_HEADER]: token }, proof)), 400, 'without the proof');
  t.equal(refusal(() => launcherTokenOf({ [LAUNCHER_TOKEN_HEADER]: token, [GATEWAY_PROOF_HEADER]: 'forged' }, proof)), 400, 'with a wrong proof');
  t.equal(refusal(() => launcherTokenOf({ [LAUNCHER_TOKEN_HEADER]: token, [GATEWAY_PROOF_HEADER]: proof }, undefined)), 400, 'an API without a proof accepts none');
  t.equal(refusal(() => launcherTokenOf({ [LAUNCHER_TOKEN_HEADER]: 'a b', [GATEWAY_PROOF_HEADER]: proof }, proof)), 400, 'malformed');
});

t.test('the bare pod mounts the Secret and names only the file; the double materializes it', async (t) => {
  const pod = withLauncherSecret(bareDriverPod({ appName: 'kernel-x-1', jobName: 'kernel-x', namespace: 'ns' }), 'kernel-x-1-launcher');
  t.notOk(JSON.stringify(pod).includes(token));
  const container = pod.spec!.containers[0]!;
  t.same(container.env, [{ name: 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE', value: '/var/run/submission-service/launcher/token' }]);
  t.same(pod.spec!.volumes, [{ name: 'kernel-launcher', secret: { secretName: 'kernel-x-1-launcher', defaultMode: 0o440 } }]);
  t.same(container.volumeMounts, [{ name: 'kernel-launcher', mountPath: '/var/run/submission-service/launcher', readOnly: true }]);
  t.equal(pod.spec!.securityContext?.fsGroup, 185);

  const dir = mkdtempSync(join(tmpdir(), 'ss-volumes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const asked: string[] = [];
  const ran = await materializeSecretVolumes(pod, join(dir, 'pod'), async (name) => {
    asked.push(name);
    return { data: { token: Buffer.from(token).toString('base64') } };
  });
  t.same(asked, ['kernel-x-1-launcher'], 'read from the apiserver by name');
  const file = ran.spec!.containers[0]!.env![0]!.value!;
  t.equal(file, join(dir, 'pod', 'kernel-launcher', 'token'), 'the env points at the materialized file');
  t.equal(readFileSync(file, 'utf8'), token);
  t.equal(statSync(file).mode & 0o777, 0o440, 'with the volume\'s mode');
  if (process.getuid?.() !== 0) t.throws(() => unlinkSync(file), 'read-only, as a mount is (root ignores modes)');
  removeSecretVolumes(join(dir, 'pod'));
  t.throws(() => statSync(join(dir, 'pod')), 'removed with its pod');
  t.same(await materializeSecretVolumes(bareDriverPod({ appName: 'a', jobName: 'a', namespace: 'ns' }), join(dir, 'none'), async () => { throw new Error('not asked'); }),
    bareDriverPod({ appName: 'a', jobName: 'a', namespace: 'ns' }), 'a pod without Secret volumes is run as it is');
});

t.test('a warm pool kernel\'s claimer may act on its application', async (t) => {
  const policy = defaultPolicy;
  const claimed = { submittedBy: 'gateway', labels: { [KERNEL_CLAIMER_LABEL]: 'aaa' } };
  t.ok(mayActOnApplication({ id: 'aaa', role: 'user' }, claimed, policy), 'the claimer');
  t.ok(mayActOnApplication({ id: 'gateway', role: 'user' }, claimed, policy), 'the submitter (the gateway removes it)');
  t.notOk(mayActOnApplication({ id: 'bbb', role: 'user' }, claimed, policy), 'another user key');
  t.ok(mayActOnApplication({ id: 'bbb', role: 'admin' }, claimed, policy), 'an admin');
  t.notOk(mayActOnApplication({ id: 'aaa', role: 'user' }, { submittedBy: 'gateway', labels: {} }, policy), 'unclaimed: the submitter\'s only');
});
