// A retried kernel's launcher credential (issue 26): the first driver's one-time token is spent
// by its launcher, so each later attempt's driver gets a token of its own, in a Secret of its own
// (named after its pod), which the gateway takes once, and only for a later attempt than any it
// took; taking it ends the first token too. In local mode the cluster writes a retried kernel's
// fresh token where its driver's env names the file, under a secret of the process (never the
// data dir's gateway secret, which local drivers can read).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  attemptLauncherToken, attemptPodName, bareDriverPod, isLauncherToken, KERNEL_ID_LABEL_KEY, launcherSecretName, LAUNCHER_SECRET_VOLUME, launcherTokenAttempt,
  retryLauncherCredential,
} from '../../domain/index.js';
import { nextAttemptPod } from '../../cluster/kubernetes/attempt-starter.js';
import type { ApplicationResource } from '../../cluster/kubernetes/records.js';
import { LauncherAuth } from '../../gateway/launcher-auth.js';
import { LauncherFiles } from '../../gateway/launcher-files.js';
import { startTestApi } from '../helpers/api.js';
import { waitForState } from '../helpers/poll.js';

const SECRET = 'the-secret-the-api-and-the-gateway-share';
const KERNEL = '0b6c7f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f';

/** A kernel's Application waiting for attempt `attempt`, as the controller holds it. */
function kernelApplication(attempt: number, labels: Record<string, string> = { [KERNEL_ID_LABEL_KEY]: KERNEL, 'kernel.submission-service.io/kernel': 'true' }): ApplicationResource {
  return {
    apiVersion: 'submission-service.io/v1', kind: 'Application',
    metadata: { name: 'kernel-python-1', namespace: 'spark', uid: 'uid-kernel', labels },
    spec: { jobName: 'kernel-python', configTemplateName: 'python', config: { restartPolicy: { type: 'OnFailure' } } as ApplicationResource['spec']['config'] },
    status: { state: 'PENDING', attempt, startedAt: null, endedAt: null, runningExecutors: 0, transitions: [] },
  } as ApplicationResource;
}

const volumeSecret = (pod: ReturnType<typeof nextAttemptPod>) => pod.spec?.volumes?.find((v) => v.name === LAUNCHER_SECRET_VOLUME)?.secret?.secretName;

t.test('attempt 2 of a kernel mounts a Secret of its own, with a token of its own', async (t) => {
  const bare = nextAttemptPod(kernelApplication(2), 'spark', {});
  const credential = retryLauncherCredential(bare, SECRET);
  t.ok(credential, 'a retried kernel gets a credential');
  const second = attemptPodName('kernel-python-1', 2);
  t.equal(credential!.secretName, `${second}-launcher`, 'named after the attempt\'s driver pod');
  t.not(credential!.secretName, launcherSecretName('kernel-python-1'), 'not the first attempt\'s Secret, whose token is spent');
  t.equal(volumeSecret(credential!.pod), credential!.secretName, 'the attempt\'s pod mounts it');
  t.same(credential!.pod.spec!.containers[0]!.env?.find((e) => e.name === 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE'), { name: 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE', value: '/var/run/submission-service/launcher/token' });
  t.notOk(JSON.stringify(credential!.pod).includes(credential!.token), 'the token is in the Secret only, not in the pod');
  t.ok(isLauncherToken(credential!.token), 'a token the API and the launcher take');
  t.equal(credential!.token, attemptLauncherToken(SECRET, KERNEL, 2));
  t.equal(launcherTokenAttempt(credential!.token), 2, 'it says its attempt');

  const third = retryLauncherCredential(nextAttemptPod(kernelApplication(3), 'spark', {}), SECRET)!;
  t.not(third.token, credential!.token, 'attempt 3 gets another token');
  t.not(third.secretName, credential!.secretName, 'in another Secret');
});

t.test('no retry credential for a first attempt, a batch application, or an API without the gateway\'s secret', async (t) => {
  t.equal(retryLauncherCredential(nextAttemptPod(kernelApplication(1), 'spark', {}), SECRET), undefined, 'the first attempt\'s is the submission\'s');
  t.equal(retryLauncherCredential(nextAttemptPod(kernelApplication(2, { team: 'a' }), 'spark', {}), SECRET), undefined, 'not a kernel');
  t.equal(retryLauncherCredential(nextAttemptPod(kernelApplication(2), 'spark', {}), undefined), undefined, 'no shared secret');
  t.equal(launcherTokenAttempt('A'.repeat(32)), undefined, 'the gateway\'s own random tokens are no attempt\'s');
  t.equal(launcherTokenAttempt(`attempt-1-${'A'.repeat(43)}`), undefined, 'attempt 1 has the gateway\'s token, never a derived one');
});

t.test('the gateway takes each attempt\'s token once, only for a later attempt, and it ends the first token', async (t) => {
  const auth = new LauncherAuth(SECRET);
  const first = auth.issue(KERNEL);
  const second = attemptLauncherToken(SECRET, KERNEL, 2);
  t.ok(auth.verify(KERNEL, second), 'attempt 2\'s launcher gets in');
  t.notOk(auth.verify(KERNEL, second), 'once');
  t.notOk(auth.verify(KERNEL, first), 'the first attempt\'s unused token is revoked');
  t.ok(auth.verify(KERNEL, attemptLauncherToken(SECRET, KERNEL, 4)), 'a later attempt');
  t.notOk(auth.verify(KERNEL, attemptLauncherToken(SECRET, KERNEL, 3)), 'never an earlier one after it');
  t.notOk(auth.verify('another-kernel', attemptLauncherToken(SECRET, KERNEL, 5)), 'nor another kernel\'s');
  t.notOk(auth.verify(KERNEL, attemptLauncherToken('another secret', KERNEL, 5)), 'nor one under another secret');
  t.notOk(auth.verify(KERNEL, `attempt-6-${'A'.repeat(43)}`), 'nor a forged one');
  t.ok(auth.verify(KERNEL, auth.reconnectSecret(KERNEL)), 'the reconnect secret still works');
  auth.forget(KERNEL);
  t.ok(new LauncherAuth(SECRET).verify(KERNEL, attemptLauncherToken(SECRET, KERNEL, 2)), 'a kernel forgotten starts over (a new gateway process knows no taken attempts)');
});

t.test('local mode\'s gateway takes tokens under the process\'s own secret only, never under its secret file\'s', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-launchers-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.notOk(new LauncherAuth(SECRET, new LauncherFiles(dir)).verify(KERNEL, attemptLauncherToken(SECRET, KERNEL, 2)), 'none without an attempt secret (DIR/gateway-secret is readable by local drivers)');
  const auth = new LauncherAuth(SECRET, new LauncherFiles(dir), 'this-process-only');
  t.notOk(auth.verify(KERNEL, attemptLauncherToken(SECRET, KERNEL, 2)), 'not under the gateway secret');
  t.ok(auth.verify(KERNEL, attemptLauncherToken('this-process-only', KERNEL, 2)), 'under the secret the local cluster derives them from (cli/local.ts)');
});

t.test('local mode: a retried kernel\'s driver finds a fresh token in its token file', async (t) => {
  const asked: [string, number][] = [];
  const api = await startTestApi(t, { local: { retryLauncherToken: (kernelId, attempt) => { asked.push([kernelId, attempt]); return `fresh-token-of-attempt-${attempt}`; } } });
  // As a standalone gateway submits a kernel to a local API: its labels and its one-time token beside the config.
  const bare = bareDriverPod({
    appName: 'kernel-local-1', jobName: 'kernel-default', namespace: 'local',
    labels: { 'kernel.submission-service.io/kernel': 'true', [KERNEL_ID_LABEL_KEY]: KERNEL },
    // The test double exits 1 (its arguments): attempt 1 fails, attempt 2 is the last.
    configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py', arguments: ['exit=1'], restartPolicy: { type: 'OnFailure', retries: 1, retryIntervalSeconds: 0 } },
  });
  const created = await api.cluster.createDriver(bare, { dryRun: false, launcherToken: 'F'.repeat(32) });
  t.ok(created.ok, 'the kernel is submitted');
  const ended = await waitForState(() => api.getApp('kernel-local-1'), ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN']);
  t.equal(ended.state, 'FAILED');
  t.same(asked, [[KERNEL, 2]], 'one fresh token, for attempt 2 of that kernel');
  // The test double does not read the file (a launcher reads and deletes it): what attempt 2 found is still there.
  t.equal(readFileSync(join(api.dataDir, 'run', 'kernel-local-1.launcher-token'), 'utf8'), 'fresh-token-of-attempt-2', 'attempt 2\'s driver had the fresh token where its env says');
});
