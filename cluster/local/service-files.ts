// What a local driver may point at. Its main file and the files Spark fetches for it
// (spark.files, spark.jars, …) are read with the driver's rights: a path into the data dir
// would hand it keys.json, session-secret or gateway-secret (`local://<data dir>/session-secret#.py`
// printed the secret into the app's log). Such paths are refused with a 400, symlinks and
// `..` resolved, whether or not a sandbox would hide the file anyway: the refusal says why.
// Without a sandbox, JVM options that run a command or load an agent are refused too; inside
// one they run as the driver's own unprivileged code, which a Python main file can do anyway.
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { localSubmitParts } from './spark-command.js';

/** Spark properties that name files the driver reads or hands to Spark (comma-separated lists). */
const FILE_PROPERTIES: Record<string, RegExp> = {
  'spark.jars': /,/, 'spark.files': /,/, 'spark.submit.pyFiles': /,/, 'spark.archives': /,/,
  'spark.driver.extraClassPath': /:/, 'spark.executor.extraClassPath': /:/,
};
/** spark-submit's names for "no file of its own" in the primary resource's place (a Connect server's `spark-internal`), not paths. */
const SPARK_RESOURCE_MARKERS = new Set(['spark-internal', 'spark-shell', 'pyspark-shell', 'sparkr-shell']);
/** Spark properties holding JVM options. */
const JVM_OPTION_PROPERTIES = ['spark.driver.extraJavaOptions', 'spark.executor.extraJavaOptions', 'spark.driver.defaultJavaOptions', 'spark.executor.defaultJavaOptions'];
/** JVM options that run a command, load native code or an agent, or read more options from a file. */
/** Anywhere in the text: Spark splits the options as a shell would, so quotes may come first. */
const COMMAND_JVM_OPTION = /-XX:\+?(OnOutOfMemoryError|OnError|Flags|VMOptionsFile)|-agentpath|-agentlib|-javaagent|-Xrun|-Xbootclasspath|(^|[\s'"])@/i;

export interface ServiceFileContext {
  dataDir: string;
  /** The driver's work dir (relative paths are read from it in the sandbox; `$(SPARK_LOCAL_DIRS)` is it). */
  workDir: string;
  sandboxed: boolean;
}

/** `local:///a#x`, `file:/a`, `/a` → `/a`; other schemes (s3a://, https://) → undefined. */
function localFilePath(entry: string, cwd: string): string | undefined {
  const text = entry.trim();
  if (!text) return undefined;
  if (/^(local|file):/i.test(text)) {
    try {
      return decodeURIComponent(new URL(text.replace(/^local:/i, 'file:')).pathname);
    } catch {
      return text.replace(/^(local|file):(\/\/)?/i, '').replace(/[#?].*$/, '');
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return undefined;
  // Spark cuts a fragment (`#name`) off plain paths too.
  const path = text.replace(/#.*$/, '');
  return isAbsolute(path) ? path : resolve(cwd, path);
}

/** The path with symlinks resolved as far as it exists (a file yet to be made resolves through its parent). */
function realPath(path: string): string {
  let existing = resolve(path);
  const rest: string[] = [];
  while (!existsSync(existing) && dirname(existing) !== existing) {
    rest.unshift(basename(existing));
    existing = dirname(existing);
  }
  try {
    return join(realpathSync(existing), ...rest);
  } catch {
    return resolve(path);
  }
}

const inside = (path: string, dir: string) => {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/** The first path or option of the admitted driver pod that local mode refuses, or undefined. */
export function serviceFileRefusal(pod: V1Pod, ctx: ServiceFileContext): { message: string; field: string } | undefined {
  const parts = localSubmitParts(pod, { sparkSubmit: 'spark-submit', workDir: ctx.workDir }, 1);
  const conf = new Map<string, string>();
  parts.options.forEach((option, i) => {
    if (option !== '--conf') return;
    const [key, ...value] = (parts.options[i + 1] ?? '').split('=');
    conf.set(key!, value.join('='));
  });
  const cwd = ctx.sandboxed ? ctx.workDir : process.cwd();
  const dataDir = realPath(ctx.dataDir);
  const candidates: [string, string][] = [];
  if (parts.primary !== undefined && !SPARK_RESOURCE_MARKERS.has(parts.primary)) candidates.push(['mainApplicationFile', parts.primary]);
  for (const [key, separator] of Object.entries(FILE_PROPERTIES)) {
    for (const entry of (conf.get(key) ?? '').split(separator)) candidates.push([`engineConf.${key}`, entry]);
  }
  for (const [field, entry] of candidates) {
    const path = localFilePath(entry, cwd);
    if (path === undefined) continue;
    const real = realPath(path);
    if (inside(resolve(path), ctx.dataDir) || inside(real, dataDir)) {
      return { field, message: `field "${field}": ${JSON.stringify(entry)} is inside the service's data dir (keys, secrets and other applications' files); local drivers may not read it` };
    }
  }
  if (!ctx.sandboxed) {
    for (const key of JVM_OPTION_PROPERTIES) {
      const options = conf.get(key);
      if (options !== undefined && COMMAND_JVM_OPTION.test(options)) {
        return { field: `engineConf.${key}`, message: `field "engineConf.${key}": JVM options that run a command or load an agent or native library (-XX:OnOutOfMemoryError, -XX:OnError, -agentpath, -javaagent, …) are refused in local mode without a driver sandbox (see docs/security.md)` };
      }
    }
  }
  return undefined;
}
