// What archiving a 100 MB driver log costs in Kubernetes mode, on the test bed: the real
// apiserver, our webhook (it puts the log-archive finalizer on the driver pod), the controller
// with its log archive (cluster/kubernetes/log-archive.ts) in this process, the test bed's S3
// server, and FakeKubelet (a test double of a kubelet: it runs the driver as a local process
// and serves its log as a kubelet does, through the apiserver). The driver prints LOG_MB of
// lines and exits.
//   end → released     the driver pod's phase Succeeded (watch event) → the pod's finalizer
//                      removed (watch event): what archiving adds before the pod may go
//   end → final        the same phase → the application's record COMPLETED (the controller)
//   sent before the end  bytes of the log the archive had sent while the pod ran (its follow)
//   RSS                (also from the submission on, while the log is followed) this process (controller, archiver, and the fake kubelet serving the
//                      log) sampled every 20 ms from the driver's end until the release
//
//   node --import tsx bench/history/driver-log-kubernetes.ts   (scripts/setup.sh with SETUP_TEST_TOOLS=1)
//   env: LOG_MB (100), LOG_SECONDS (30: the driver writes its log evenly over that long, as a
//   run does; 0: all at once just before it ends, the worst case for following)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Watch, type V1Pod } from '@kubernetes/client-node';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { isTerminal } from '../../cluster/cluster.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { s3ServerBinary } from '../../testbed/history-bed.js';
import { startS3Server } from '../../testbed/s3-server.js';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { buildApi } from '../../submit-api/app.js';
import { httpCall, startKubeBed } from '../../test/helpers/kubernetes.js';
import { realSpark } from '../../test/helpers/service.js';
import { tempDir } from '../../test/helpers/temp.js';
import { envNumber, fmt, load, saveSummary, table } from '../lib.js';

const LOG_MB = envNumber('LOG_MB', 100);
// 0 is a setting of its own (all at once), which envNumber would take for "not set".
const LOG_SECONDS = process.env.LOG_SECONDS?.trim() === '0' ? 0 : envNumber('LOG_SECONDS', 30);

// eslint-disable-next-line max-lines-per-function -- one run on one test bed: the driver, the archive and the RSS samples share its state
async function main() {
  const spark = realSpark();
  if (!spark) throw new Error('no Spark virtualenv (scripts/setup.sh makes one)');
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => { teardowns.push(fn); } };
  const startLoad = load();
  try {
    const dir = tempDir(t, 'bench-k8s-driver-log-');
    const s3 = await startS3Server(s3ServerBinary(), join(dir, 's3'));
    t.teardown(() => s3.stop());
    const bed = await startKubeBed(t, { rules: { archiveLogs: true } });
    const { namespace, clients } = bed;
    await bed.api.close(); // the controller below, with the log archive, takes its place
    const cluster = new KubernetesCluster({ clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: new LogArchive(s3.store, 'spark-logs') });
    await cluster.start();
    t.teardown(() => cluster.close());
    const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(dir, 'kubelet'), ...spark, cores: 2 });
    await kubelet.start();
    t.teardown(() => kubelet.stop());

    const chatty = join(dir, 'chatty.py');
    writeFileSync(chatty, [
      'import sys, time',
      `total = ${LOG_MB} * 1024 * 1024`,
      `seconds = ${LOG_SECONDS}`,
      'written = n = 0',
      'start = time.time()',
      'while written < total:',
      '    ahead = start + seconds * written / total - time.time()',
      '    if ahead > 0:',
      '        sys.stdout.flush()',
      '        time.sleep(ahead)',
      "    line = '26/11/26 01:%02d:%02d INFO TaskSetManager: Finished task %d.0 in stage 3.0 (TID %d) in 12 ms on 10.0.0.7 (executor 1) (%d/10000) padding %s\\n' % (n // 60 % 60, n % 60, n, n, n, 'x' * 60)",
      '    sys.stdout.write(line)',
      '    written += len(line)',
      '    n += 1',
      'sys.stdout.flush()',
    ].join('\n'));

    const api = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } } });
    const apiUrl = await api.listen({ port: 0, host: '127.0.0.1' });
    t.teardown(() => api.close());
    const submitted = await httpCall(apiUrl, 'POST', '/api/apps/', { jobName: 'chatty', configOverrides: { type: 'Python', mainApplicationFile: `local://${chatty}`, executor: { cores: 1, instances: 1 } } });
    if (submitted.status !== 201) throw new Error(`submission answered ${submitted.status}: ${submitted.body}`);
    const appName = (submitted.json as { appName: string }).appName;

    // The pod's end and its release, from a watch (no polling).
    let endedAt: number | undefined;
    let releasedAt: number | undefined;
    let finalAt: number | undefined;
    const rss = () => process.memoryUsage().rss / 1024 / 1024;
    let atEnd = 0;
    let sentAtEnd: number | undefined;
    let peak = 0;
    // While the driver runs too: following its log must not grow memory either.
    const atSubmit = rss();
    let runPeak = atSubmit;
    const runSampler = setInterval(() => {
      runPeak = Math.max(runPeak, rss());
      if (endedAt === undefined) sentAtEnd = cluster.archiver?.sentBytes(appName) ?? sentAtEnd;
    }, 20);
    let sampler: NodeJS.Timeout | undefined;
    const released = new Promise<void>((ok, fail) => {
      void new Watch(clients.kc).watch(`/api/v1/namespaces/${namespace}/pods`, { fieldSelector: `metadata.name=${appName}` }, (_type: string, pod: V1Pod) => {
        const now = performance.now();
        const phase = pod.status?.phase;
        if (endedAt === undefined && (phase === 'Succeeded' || phase === 'Failed')) {
          endedAt = now;
          atEnd = peak = rss();
          sampler = setInterval(() => { peak = Math.max(peak, rss()); }, 20);
        }
        if (endedAt !== undefined && releasedAt === undefined && !(pod.metadata?.finalizers ?? []).includes(LOG_ARCHIVE_FINALIZER)) {
          releasedAt = now;
          clearInterval(sampler);
          clearInterval(runSampler);
          ok();
        }
      }, (error: unknown) => { if (releasedAt === undefined) fail(new Error(`the watch ended: ${String(error)}`)); }).then((request) => t.teardown(() => request.abort()));
    });
    const final = new Promise<void>((ok) => {
      const off = cluster.events.subscribe(undefined, (message) => {
        if (message.type === 'changed' && message.record.appName === appName && isTerminal(message.record.state)) {
          finalAt = performance.now();
          off();
          ok();
        }
      });
    });
    const deadline = setTimeout(() => process.stderr.write('driver-log-kubernetes: still waiting after 10 min\n'), 600_000);
    await Promise.all([released, final]);
    clearTimeout(deadline);
    const size = await s3.store.size(`spark-logs/${appName}/driver.log`);
    const rows = [
      ['archived log', `${fmt((size ?? 0) / 1024 / 1024, 1)} MB`, ''],
      ['driver pod Succeeded → finalizer removed', `${fmt(releasedAt! - endedAt!)} ms`, '< 1 s'],
      ['driver pod Succeeded → record final', `${fmt(finalAt! - endedAt!)} ms`, ''],
      ['sent to the store while the pod ran', sentAtEnd === undefined ? 'not followed' : `${fmt(sentAtEnd / 1024 / 1024, 1)} MB`, 'most of it'],
      ['process RSS at the end → peak until released', `${fmt(atEnd)} → ${fmt(peak)} MB`, 'flat'],
      ['process RSS at submission → peak until released', `${fmt(atSubmit)} → ${fmt(runPeak)} MB`, 'flat'],
    ];
    process.stdout.write(`\nDriver log of ${LOG_MB} MB written over ${LOG_SECONDS} s, Kubernetes mode on the test bed (load at start ${startLoad}, at end ${load()})\n${table(['what', 'figure', 'goal'], rows)}\n`);
    saveSummary('driver-log-kubernetes', [
      { bench: 'driver log (k8s)', metric: `end → released, ${LOG_MB} MB log over ${LOG_SECONDS} s`, value: `${fmt(releasedAt! - endedAt!)} ms`, goal: '< 1000 ms', verdict: releasedAt! - endedAt! < 1000 ? 'ok' : 'above goal' },
      { bench: 'driver log (k8s)', metric: 'RSS growth while archiving', value: `${fmt(peak - atEnd)} MB`, goal: 'flat', verdict: 'info' },
    ], { endedAt, releasedAt, finalAt, atEnd, peak, size, sentAtEnd });
  } finally {
    for (const fn of teardowns.reverse()) await Promise.resolve(fn()).catch(() => undefined);
  }
}

await main();
process.exit(0);
