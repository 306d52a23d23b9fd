// `submission-service apps ...`: the API from a terminal.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isTerminal } from '../cluster/cluster.js';
import type { Application, ApplicationConfig } from '../schemas/index.js';
import { deepMerge } from '../domain/merge.js';
import { serverEvents } from '../lib/server-events.js';


export function client(url: string, apiKey?: string) {
  const headers: Record<string, string> = apiKey ? { 'x-api-key': apiKey } : {};
  return async (method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> => {
    const response = await fetch(url.replace(/\/$/, '') + path, {
      method,
      signal,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) {
      const text = await response.text();
      let message = text;
      try { message = (JSON.parse(text) as { message?: string }).message ?? text; } catch { /* plain text */ }
      throw new Error(`${method} ${path}: ${response.status} ${message}${response.status === 422 ? `\n${text}` : ''}`);
    }
    return response;
  };
}

/** `executor.cores=4` -> { executor: { cores: 4 } }; values are JSON when they parse, else strings. */
export function parseSet(assignment: string): ApplicationConfig {
  const at = assignment.indexOf('=');
  if (at <= 0) throw new Error(`--set takes path=value, not "${assignment}"`);
  const path = assignment.slice(0, at).split('.');
  const raw = assignment.slice(at + 1);
  let value: unknown = raw;
  // engineConf values are strings in Spark; everything else may be a number or JSON.
  if (path[0] !== 'engineConf') try { value = JSON.parse(raw); } catch { /* a string */ }
  if (path[0] === 'engineConf' && path.length > 2) path.splice(1, path.length - 1, path.slice(1).join('.'));
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as ApplicationConfig;
}

/**
 * Follows one job's change feed (GET /api/apps/events?jobName=, in local and Kubernetes mode
 * alike) instead of polling. Opened before the submission, so no change of the new
 * application can be missed; `submit` runs once the feed said `ready`.
 */
async function submitAndFollow(call: ReturnType<typeof client>, jobName: string, submit: () => Promise<Application>): Promise<number> {
  const abort = new AbortController();
  const response = await call('GET', `/api/apps/events?jobName=${encodeURIComponent(jobName)}`, undefined, abort.signal);
  const events = serverEvents(response.body as unknown as AsyncIterable<Uint8Array>);
  const first = await events.next();
  if (first.done || first.value.event !== 'ready') throw new Error('the events stream did not start with ready');
  const app = await submit();
  process.stderr.write(`submitted ${app.appName}\n`);
  // The log once the driver has started (a pending pod has no log yet: Kubernetes refuses it).
  let logs: Promise<void> | undefined;
  const followLog = () => call('GET', `/api/apps/${app.appName}/log?follow=true`).then(async (log) => {
    for await (const chunk of log.body as unknown as AsyncIterable<Uint8Array>) process.stdout.write(chunk);
  }).catch((error: unknown) => { process.stderr.write(`the log could not be followed: ${(error as Error).message}\n`); });
  let last = '';
  const show = (seen: Application) => {
    if (seen.state !== 'PENDING') logs ??= followLog();
    if (seen.state === last) return;
    process.stderr.write(`[${new Date().toISOString()}] ${seen.appName} ${seen.state}${seen.stateDetail ? ` (${seen.stateDetail})` : ''}\n`);
    last = seen.state ?? '';
  };
  show(app);
  try {
    while (!isTerminal(last as Application['state'])) {
      const next = await events.next();
      if (next.done) throw new Error('the events stream ended before the application did');
      const { event, data } = next.value;
      if (event === 'reset') show((await (await call('GET', `/api/apps/${app.appName}`)).json()) as Application); // a gap: read it once
      if (event !== 'changed' && event !== 'deleted') continue;
      const seen = JSON.parse(data) as Application;
      if (seen.appName !== app.appName) continue;
      if (event === 'deleted') { process.stderr.write(`${app.appName} was deleted\n`); return 1; }
      show(seen);
    }
  } finally {
    abort.abort();
    await events.return(undefined).catch(() => undefined);
  }
  await logs;
  return last === 'COMPLETED' ? 0 : last === 'KILLED' ? 130 : 1;
}

export async function appsCommand(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      url: { type: 'string', default: process.env.SUBMISSION_SERVICE_URL ?? 'http://127.0.0.1:8080' },
      'api-key': { type: 'string', default: process.env.SUBMISSION_SERVICE_API_KEY },
      job: { type: 'string' },
      template: { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      file: { type: 'string' },
      follow: { type: 'boolean', short: 'f', default: false },
      'dry-run': { type: 'boolean', default: false },
      state: { type: 'string' },
      search: { type: 'string' },
    },
  });
  const call = client(values.url, values['api-key']);
  switch (verb) {
    case 'submit': {
      if (!values.job) throw new Error('apps submit needs --job NAME');
      let overrides: ApplicationConfig = values.file ? JSON.parse(readFileSync(values.file, 'utf8')) : {};
      for (const assignment of values.set) overrides = deepMerge(overrides, parseSet(assignment));
      const query = values['dry-run'] ? '?dryRun=true' : '';
      const jobName = values.job;
      const submit = async () => (await (await call('POST', `/api/apps/${query}`, { jobName, configTemplateName: values.template, configOverrides: overrides })).json()) as Application;
      if (values.follow && !values['dry-run']) return submitAndFollow(call, jobName, submit);
      process.stdout.write(`${JSON.stringify(await submit(), null, 2)}\n`);
      return 0;
    }
    case 'list': {
      const params = new URLSearchParams();
      if (values.job) params.set('jobName', values.job);
      if (values.state) params.set('state', values.state);
      if (values.search) params.set('q', values.search);
      const page = (await (await call('GET', `/api/apps/?${params}`)).json()) as { items: Application[] };
      for (const app of page.items) {
        process.stdout.write(`${app.appName.padEnd(56)} ${String(app.state).padEnd(10)} ${app.createdAt}\n`);
      }
      return 0;
    }
    case 'logs': {
      const appName = positionals[0];
      if (!appName) throw new Error('apps logs needs an application name');
      const response = await call('GET', `/api/apps/${appName}/log${values.follow ? '?follow=true' : ''}`);
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) process.stdout.write(chunk);
      return 0;
    }
    default:
      process.stderr.write('usage: submission-service apps submit|list|logs ...\n');
      return 2;
  }
}
