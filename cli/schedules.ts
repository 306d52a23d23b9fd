// `submission-service schedules ...`: /api/schedules/ from a terminal.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ApplicationConfig, Schedule, ScheduleRecord } from '../schemas/index.js';
import { deepMerge } from '../domain/merge.js';
import { client, parseSet } from './apps.js';

const USAGE = `usage: submission-service schedules list | get NAME | delete NAME | pause NAME | resume NAME
       submission-service schedules create NAME --cron "0 3 * * *" --job JOB [--time-zone Europe/Berlin] [--template T]
              [--set executor.cores=4] [--file overrides.json] [--concurrency Allow|Forbid|Replace] [--starting-deadline SECONDS] [--suspend]
       (--url, or SUBMISSION_SERVICE_URL; --api-key, or SUBMISSION_SERVICE_API_KEY)
`;

function options() {
  return {
    url: { type: 'string', default: process.env.SUBMISSION_SERVICE_URL ?? 'http://127.0.0.1:8080' },
    'api-key': { type: 'string', default: process.env.SUBMISSION_SERVICE_API_KEY },
    cron: { type: 'string' },
    'time-zone': { type: 'string' },
    job: { type: 'string' },
    template: { type: 'string' },
    set: { type: 'string', multiple: true, default: [] as string[] },
    file: { type: 'string' },
    concurrency: { type: 'string' },
    'starting-deadline': { type: 'string' },
    suspend: { type: 'boolean', default: false },
  } as const;
}

/** The body of POST /api/schedules/ from the flags (the API checks it). */
interface CreateFlags {
  cron?: string; 'time-zone'?: string; job?: string; template?: string; set: string[]; file?: string;
  concurrency?: string; 'starting-deadline'?: string; suspend: boolean;
}

function scheduleFrom(name: string, values: CreateFlags): Schedule {
  if (!values.cron || !values.job) throw new Error('schedules create needs --cron "..." and --job NAME');
  let overrides = (values.file ? JSON.parse(readFileSync(values.file, 'utf8')) : {}) as ApplicationConfig;
  for (const assignment of values.set) overrides = deepMerge(overrides, parseSet(assignment));
  const deadline = values['starting-deadline'];
  return {
    name, schedule: values.cron, jobName: values.job, configOverrides: overrides,
    ...(values['time-zone'] ? { timeZone: values['time-zone'] } : {}),
    ...(values.template ? { configTemplateName: values.template } : {}),
    ...(values.concurrency ? { concurrencyPolicy: values.concurrency as Schedule['concurrencyPolicy'] } : {}),
    ...(deadline !== undefined ? { startingDeadlineSeconds: Number(deadline) } : {}),
    ...(values.suspend ? { suspend: true } : {}),
  };
}

const line = (s: ScheduleRecord) =>
  `${s.name.padEnd(28)} ${s.schedule.padEnd(16)} ${(s.timeZone ?? 'UTC').padEnd(16)} ${s.jobName.padEnd(24)} ${s.suspend ? 'paused'.padEnd(24) : String(s.nextRunAt ?? '-').padEnd(24)} ${s.lastRunName ?? '-'}\n`;

export async function schedulesCommand(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: options() });
  const call = client(values.url, values['api-key']);
  const name = positionals[0];
  const print = async (response: Response) => { process.stdout.write(`${JSON.stringify(await response.json(), null, 2)}\n`); return 0; };
  if (verb !== 'list' && verb !== undefined && !name) throw new Error(`schedules ${verb} needs a schedule name`);
  const path = `/api/schedules/${encodeURIComponent(name ?? '')}`;
  switch (verb) {
    case 'list': {
      const { items } = (await (await call('GET', '/api/schedules/')).json()) as { items: ScheduleRecord[] };
      process.stdout.write(`${'NAME'.padEnd(28)} ${'SCHEDULE'.padEnd(16)} ${'TIME ZONE'.padEnd(16)} ${'JOB'.padEnd(24)} ${'NEXT RUN'.padEnd(24)} LAST RUN\n`);
      for (const s of items) process.stdout.write(line(s));
      return 0;
    }
    case 'get': return print(await call('GET', path));
    case 'create': return print(await call('POST', '/api/schedules/', scheduleFrom(name, values)));
    case 'pause': case 'resume': return print(await call('POST', `${path}/${verb}`));
    case 'delete':
      await call('DELETE', path);
      process.stderr.write(`deleted schedule ${name}\n`);
      return 0;
    default:
      process.stderr.write(USAGE);
      return 2;
  }
}
