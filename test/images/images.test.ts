// Runs alone (scripts/test.sh): a cold build makes Debian root filesystems and installs Spark,
// and each check unpacks an image of about a gigabyte and starts a JVM in it.
// The three images this repository builds without a daemon (images/build.sh), checked from
// their OCI archives as a node would run them (test/images/oci.ts, Debian's runc): the Spark
// runtime's entrypoint runs a driver to completion and starts the Kubernetes executor backend
// with the contract's command line; the kernel image's Python has ipykernel and pyspark; the
// service image starts the service as its unprivileged user.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { repoRoot } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';
import { removeImage, runImage, unpackImage, type Unpacked } from './oci.js';

const missing = ['mmdebstrap', 'buildah', 'runc'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
const skip = process.getuid?.() !== 0 ? 'needs root (mmdebstrap, buildah and runc)'
  : missing.length ? `needs ${missing.join(', ')} (apt-get install mmdebstrap buildah runc)` : false;

// A cold build takes tens of minutes on two busy cores; a warm one returns the cached archives.
t.setTimeout(90 * 60_000);

/** Builds (or finds) the archives: `name -> path`. */
function buildImages(): Map<string, string> {
  const out = execFileSync('bash', [join(repoRoot, 'images', 'build.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 80 * 60_000 });
  return new Map(out.trim().split('\n').map((line) => line.split(' ') as [string, string]));
}

t.test('the images', { skip, timeout: 90 * 60_000 }, async (t) => {
  const archives = buildImages();
  t.same([...archives.keys()].sort(), ['kernel', 'kernel-4.2.0', 'service', 'spark-runtime', 'spark-runtime-4.2.0'], 'the service, a Spark runtime and kernel per version');
  for (const [name, archive] of archives) t.ok(existsSync(archive), `${name}: ${archive}`);
  // In memory: a root filesystem is some twenty thousand files, and on the disk the other lanes
  // load, writing and removing them took minutes (88 s to unpack Spark's, 111 s to remove it at load 25).
  const work = memoryDir(t, tempDir(t, 'subsvc-images-'));
  const unpack = unpacker(t, archives, work);
  let spark: Unpacked | undefined;

  await t.test('the Spark runtime image', async (t) => {
    spark = unpack('spark-runtime');
    t.equal(spark.name, 'localhost/submission-service/spark:3.5.7', 'the archive names the image for containerd');
    t.equal(spark.config.User, '185', "runs as the Spark images' user 185");
    t.same(spark.config.Entrypoint, ['/opt/entrypoint.sh']);
    const jars = readdirSync(join(spark.rootfs, 'opt/spark/jars'));
    for (const jar of ['spark-core_2.12-3.5.7.jar', 'spark-kubernetes_2.12-3.5.7.jar']) t.ok(jars.includes(jar), `jars/${jar}`);
    t.ok(jars.some((jar) => /^kubernetes-client-\d/.test(jar)), "the Kubernetes backend's client library is in jars/");
    for (const path of ['opt/spark/bin/spark-submit', 'opt/spark/python/lib', 'opt/spark/examples/src/main/python/pi.py']) {
      t.ok(existsSync(join(spark.rootfs, path)), `/${path}`);
    }
    t.equal(execFileSync('cmp', [join(repoRoot, 'examples/pi.py'), join(spark.rootfs, 'opt/spark/examples/src/main/python/pi.py')]).length, 0,
      "the repository's examples/pi.py is the one in the image");
    // Only copyright files are kept of /usr/share/doc, nothing of the manual (Java's postinst
    // leaves dangling links to its pages there, no files).
    const docs = execFileSync('find', ['usr/share/man', 'usr/share/doc', '-type', 'f', '-not', '-name', 'copyright'], { cwd: spark.rootfs, encoding: 'utf8' });
    t.equal(docs, '', 'no manual pages, no documentation');

    const versions = await runImage(spark, work, { args: ['sh', '-c', 'id -u; java -version 2>&1 | head -1; python3 -c "import numpy, pandas, scipy, pyarrow, pyspark; print(pyspark.__version__, numpy.__version__, pandas.__version__)"'] });
    t.equal(versions.code, 0, versions.stderr);
    const [uid, java, python] = versions.stdout.trim().split('\n');
    t.equal(uid, '185');
    t.match(java, /version "17\./, `Java 17: ${java}`);
    t.match(python, /^3\.5\.7 2\.\d+\.\d+ 2\.\d+\.\d+$/, `pyspark, numpy 2, pandas 2 (and scipy, pyarrow) import: ${python}`);

    // `driver`: what the driver pod Spark creates runs (spark-submit in client mode, bound to the pod IP).
    const driver = await runImage(spark, work, {
      args: ['driver', '--master', 'local[2]', '--conf', 'spark.ui.enabled=false', '--name', 'pi',
        'local:///opt/spark/examples/src/main/python/pi.py', '4'],
      env: { SPARK_DRIVER_BIND_ADDRESS: '127.0.0.1' },
    });
    t.equal(driver.code, 0, `driver ends cleanly:\n${driver.stderr.slice(-3000)}`);
    t.match(driver.stdout, /Pi is roughly 3\.\d+/, driver.stdout);

    await executorEntrypoint(t, spark, work);

    // Anything else is run as given.
    const echo = await runImage(spark, work, { args: ['echo', 'as', 'given'] });
    t.equal(echo.stdout, 'as given\n');
  });

  await t.test('the kernel image', async (t) => {
    // The Spark runtime's layers and one more: only that one is unpacked, onto theirs (as they are in the archive, not as runs left them).
    const kernel = unpack('kernel', spark);
    t.equal(kernel.config.User, '185');
    t.ok(existsSync(join(kernel.rootfs, 'opt/submission-service/launcher.py')), 'the launcher is in the image');
    const run = await runImage(kernel, work, { args: ['python3', '-c', 'import ipykernel, pyspark, scipy, matplotlib; print(ipykernel.__version__, pyspark.__version__)'] });
    t.equal(run.code, 0, run.stderr);
    t.match(run.stdout, /^6\.\d+\.\d+ 3\.5\.7$/m, `ipykernel 6 and pyspark 3.5.7 import: ${run.stdout}`);
    // The launcher dials the gateway when run; here every module it imports must be in the image.
    const imports = 'import ast, importlib, sys\n'
      + 'tree = ast.parse(open("/opt/submission-service/launcher.py").read())\n'
      + 'names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}\n'
      + 'names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}\n'
      + 'for name in sorted(names): importlib.import_module(name)\n'
      + 'print(len(names), "modules")\n';
    const launcher = await runImage(kernel, work, { args: ['python3', '-c', imports] });
    t.equal(launcher.code, 0, `the launcher's imports resolve: ${launcher.stderr}`);
    t.match(launcher.stdout, /^[1-9]\d* modules$/m);
    removeImage(kernel);
    if (spark) removeImage(spark);
  });

  await t.test('the service image', async (t) => {
    const service = unpack('service');
    checkServiceImage(t, service);
    const node = await runImage(service, work, { entrypoint: ['sh', '-c'], args: ['node --version; id -u'] });
    t.equal(node.code, 0, node.stderr);
    t.match(node.stdout, /^v20\.\d+\.\d+\n10001\n$/, `Node 20 as uid 10001: ${node.stdout}`);
    const help = await runImage(service, work, { args: ['--help'] });
    t.equal(help.code, 0, help.stderr);
    t.match(help.stdout, /api|webhook|local/, 'the service answers --help with its commands');
    removeImage(service);
  });
});

/** The runtime image's `executor`: the backend's command line, assembled from what Spark sets in an executor pod, then started for real. */
async function executorEntrypoint(t: Test, spark: Unpacked, work: string) {
  const executorEnv = {
    SPARK_DRIVER_URL: 'spark://CoarseGrainedScheduler@127.0.0.1:7078', SPARK_EXECUTOR_ID: '3',
    SPARK_EXECUTOR_CORES: '2', SPARK_EXECUTOR_MEMORY: '512m', SPARK_APPLICATION_ID: 'spark-0123abcd',
    SPARK_EXECUTOR_POD_IP: '127.0.0.1', SPARK_RESOURCE_PROFILE_ID: '0', SPARK_EXECUTOR_POD_NAME: 'pi-exec-3',
    // Spark numbers spark.executor.extraJavaOptions in order; the tenth must come after the second.
    SPARK_JAVA_OPT_10: '-Dlast=10', SPARK_JAVA_OPT_0: '-Dfirst=0', SPARK_JAVA_OPT_1: '-Dsecond=1',
  };
  const dry = await runImage(spark, work, { args: ['executor'], env: { ...executorEnv, SPARK_ENTRYPOINT_DRY_RUN: '1' } });
  t.equal(dry.code, 0, dry.stderr);
  const argv = dry.stdout.trim().split('\n');
  t.match(argv[0], /(^|\/)java$/);
  t.same(argv.slice(1, 6), ['-Dfirst=0', '-Dsecond=1', '-Dlast=10', '-Xms512m', '-Xmx512m'], 'SPARK_JAVA_OPT_* in order, then the heap');
  t.equal(argv[6], '-cp');
  t.match(argv[7], /\/opt\/spark\/jars\/\*/);
  t.same(argv.slice(8), ['org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend',
    '--driver-url', executorEnv.SPARK_DRIVER_URL, '--executor-id', '3', '--cores', '2', '--app-id', 'spark-0123abcd',
    '--hostname', '127.0.0.1', '--resourceProfileId', '0', '--podName', 'pi-exec-3']);
  const missingUrl = await runImage(spark, work, { args: ['executor'], env: { ...executorEnv, SPARK_DRIVER_URL: '' } });
  t.equal(missingUrl.code, 64, 'an executor without its driver URL is refused before Java starts');
  t.match(missingUrl.stderr, /SPARK_DRIVER_URL is not set/);
  // Started for real, the backend comes up and fails only because no driver listens.
  const executor = await runImage(spark, work, { args: ['executor'], env: { ...executorEnv, SPARK_DRIVER_URL: 'spark://CoarseGrainedScheduler@127.0.0.1:1' } });
  t.not(executor.code, 0, 'no driver: the executor exits');
  t.match(executor.stderr, /KubernetesExecutorBackend/, 'the Kubernetes executor backend started');
  t.match(executor.stderr, /Connection refused|Failed to connect/, `and failed to reach the driver:\n${executor.stderr.slice(-2000)}`);
}

/** DIR with a tmpfs on it (4 GiB at most, memory only as files are written), unmounted when the test ends, before DIR goes. */
function memoryDir(t: Test, dir: string): string {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4g,mode=0700', 'subsvc-images', dir]);
  t.teardown(() => { execFileSync('umount', ['--lazy', dir]); });
  return dir;
}

/** Unpacks an image under WORK; each overlay mount is removed again, a failed test's too (teardowns run last-registered first: before the folder goes). */
function unpacker(t: Test, archives: Map<string, string>, work: string): (name: string, base?: Unpacked) => Unpacked {
  const unpacked: Unpacked[] = [];
  t.teardown(() => { for (const image of unpacked.reverse()) removeImage(image); });
  return (name, base) => {
    const image = unpackImage(archives.get(name)!, join(work, name), base);
    unpacked.push(image);
    return image;
  };
}

/**
 * The service image's user and package: the repository's version, every production dependency
 * and no dev-only package (as the lockfile marks them): images/build.sh takes them from a cached
 * install (service_deps), which must hold what `npm ci --omit=dev` would.
 */
function checkServiceImage(t: Test, service: Unpacked) {
  t.equal(service.config.User, '10001:10001', "the chart's runAsUser");
  const app = join(service.rootfs, 'opt/submission-service');
  const readJson = <T>(path: string) => JSON.parse(readFileSync(path, 'utf8')) as T;
  const repo = readJson<{ version: string; dependencies: Record<string, string> }>(join(repoRoot, 'package.json'));
  t.equal(readJson<{ version: string }>(join(app, 'package.json')).version, repo.version, "the image's package.json is the repository's version");
  for (const dependency of Object.keys(repo.dependencies)) t.ok(existsSync(join(app, 'node_modules', dependency, 'package.json')), `dependency ${dependency}`);
  const lock = readJson<{ packages: Record<string, { dev?: boolean }> }>(join(repoRoot, 'package-lock.json'));
  const devOnly = Object.keys(lock.packages).filter((path) => path && lock.packages[path].dev);
  t.ok(devOnly.includes('node_modules/typescript') && devOnly.includes('node_modules/tap'), 'the lockfile marks dev-only packages');
  t.same(devOnly.filter((path) => existsSync(join(app, path))), [], 'no dev-only package (typescript, tap, ...) in node_modules');
}
