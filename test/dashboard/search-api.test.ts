// GET /api/apps/?q=: the server's search (case-insensitive substring of appName, jobName or a
// label value), combined with state, jobName, labelSelector and cursor paging, and the counts
// within it; in local mode over records crafted in the data dir (terminal, so no driver runs).
import { join } from 'node:path';
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { craftRecords } from '../helpers/records.js';
import { tempDir } from '../helpers/temp.js';

t.test('q searches names, jobs and label values; with the other filters, paging and counts', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const names = craftRecords(dataDir, 60);
  const api = await startTestApi(t, { dataDir });
  const list = async (query: string) => {
    const res = await api.call('GET', `/api/apps/?view=summary&limit=500&${query}`);
    t.equal(res.status, 200, query);
    return (res.json.items as { appName: string }[]).map((i) => i.appName);
  };
  const newestFirst = (xs: string[]) => [...xs].reverse();

  t.same(await list('q=DATA-team'), newestFirst(names.filter((_, i) => i % 10 === 0)), 'a label value, ignoring case');
  t.same(await list('q=ETL-3'), newestFirst(names.filter((_, i) => i % 5 === 3)), 'a job name');
  t.same(await list(`q=${names[17].slice(-5)}`), [names[17]], 'part of an application name');
  t.same(await list('q=owner'), [], 'label keys are not searched');
  t.same(await list('q='), newestFirst(names), 'empty: no search');
  t.same(await list('q=data&state=FAILED'), newestFirst(names.filter((_, i) => i % 10 === 0 && i % 3 === 1)), 'with state');
  t.same(await list('q=data&jobName=etl-0'), newestFirst(names.filter((_, i) => i % 10 === 0)), 'with jobName');
  t.same(await list('q=etl&labelSelector=owner=Data-Team'), newestFirst(names.filter((_, i) => i % 10 === 0)), 'with labelSelector');

  // Cursor paging through a search: every match once, in order.
  const paged: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await api.call('GET', `/api/apps/?q=etl-1&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
    paged.push(...(res.json.items as { appName: string }[]).map((i) => i.appName));
    cursor = res.json.next;
  } while (cursor);
  t.same(paged, newestFirst(names.filter((_, i) => i % 5 === 1)), 'pages by cursor within the search');

  const counts = await api.call('GET', '/api/apps/counts?q=data-team');
  t.equal(counts.status, 200);
  t.same(counts.json, { total: 6, byState: { PENDING: 0, RUNNING: 0, COMPLETED: 2, FAILED: 2, KILLED: 2, UNKNOWN: 0 }, jobs: [{ jobName: 'etl-0', total: 6, byState: { PENDING: 0, RUNNING: 0, COMPLETED: 2, FAILED: 2, KILLED: 2, UNKNOWN: 0 } }] }, 'counts within the search');

  const long = await api.call('GET', `/api/apps/?q=${'x'.repeat(101)}`);
  t.equal(long.status, 400, 'over 100 characters');
  t.match(long.json.message, /q/);
  t.equal((await api.call('GET', `/api/apps/counts?q=${'x'.repeat(101)}`)).status, 400);
  const openApi = (await api.call('GET', '/api/openapi.json')).json;
  const q = openApi.paths['/api/apps/'].get.parameters.find((p: { name: string }) => p.name === 'q');
  t.equal(q?.schema?.maxLength, 100, 'q documented with its limit');
  t.match(q?.description ?? q?.schema?.description, /appName, jobName or a label value/);
  t.ok(openApi.paths['/api/apps/counts'].get.parameters.some((p: { name: string }) => p.name === 'q'), 'and on counts');
});
