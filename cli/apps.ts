// `submission-service apps ...`: the API from a terminal.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { isTerminal } from '../cluster/cluster.js';
import type { Application, ApplicationConfig } from '../schemas/index.js';
import { deepMerge } from '../webhook/domain/merge.js';


function client(url: string, apiKey?: string) {
  const headers: Record<string, string> = apiKey ? { 'x-api-key': apiKey } : {};
  return async (method: string, path: string, body?: unknown): Promise<Response> => {
    const response = await fetch(url.replace(/\/$/, '') + path, {
      method,
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

async function follow(call: ReturnType<typeof client>, appName: string): Promise<number> {
  let last = '';
  const logs = call('GET', `/api/apps/${appName}/log?follow=true`).then(async (response) => {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) process.stdout.write(chunk);
  });
  for (;;) {
    const app = (await (await call('GET', `/api/apps/${appName}`)).json()) as Application;
    if (app.state !== last) {
      process.stderr.write(`[${new Date().toISOString()}] ${appName} ${app.state}${app.stateDetail ? ` (${app.stateDetail})` : ''}\n`);
      last = app.state ?? '';
    }
    if (isTerminal(app.state)) break;
    await new Promise((ok) => setTimeout(ok, 1000));
  }
  await logs.catch(() => undefined);
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
    },
  });
  const call = client(values.url, values['api-key']);
  switch (verb) {
    case 'submit': {
      if (!values.job) throw new Error('apps submit needs --job NAME');
      let overrides: ApplicationConfig = values.file ? JSON.parse(readFileSync(values.file, 'utf8')) : {};
      for (const assignment of values.set) overrides = deepMerge(overrides, parseSet(assignment));
      const query = values['dry-run'] ? '?dryRun=true' : '';
      const response = await call('POST', `/api/apps/${query}`, { jobName: values.job, configTemplateName: values.template, configOverrides: overrides });
      const app = (await response.json()) as Application;
      if (!values.follow || values['dry-run']) {
        process.stdout.write(`${JSON.stringify(app, null, 2)}\n`);
        return 0;
      }
      process.stderr.write(`submitted ${app.appName}\n`);
      return follow(call, app.appName);
    }
    case 'list': {
      const params = new URLSearchParams();
      if (values.job) params.set('jobName', values.job);
      if (values.state) params.set('state', values.state);
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
