// One job: the size its past runs call for (GET /api/jobs/{job}/recommendation), with the
// evidence and the saving, and each run's cost as a trend chart (uPlot, served beside this file).
import { api, appHref, el, show } from './dom.js';

/** uPlot is a classic script (a global): loaded once, on the job page only. */
function loadUplot() {
  if (globalThis.uPlot) return Promise.resolve(globalThis.uPlot);
  document.head.append(el('link', { rel: 'stylesheet', href: '/dashboard/static/uPlot.min.css' }));
  return new Promise((resolve, reject) => {
    const script = el('script', { src: '/dashboard/static/uPlot.iife.min.js' });
    script.addEventListener('load', () => resolve(globalThis.uPlot));
    script.addEventListener('error', () => reject(new Error('the chart library did not load')));
    document.head.append(script);
  });
}

const size = (s) => `${s.instances} × ${s.cores} core${s.cores === 1 ? '' : 's'}, ${s.memory}`;
const hours = (value) => (value === null || value === undefined ? '—' : value.toFixed(4));

function recommendationCard(view) {
  const r = view.recommendation;
  const body = el('div', { class: 'body', id: 'recommendation' });
  if (!r) body.append(el('p', { class: 'muted' }, 'No completed run with an event log yet: the job is sized as asked.'));
  else {
    const fact = (name, value) => [el('dt', {}, name), el('dd', {}, value)];
    const da = r.suggested.dynamicAllocation;
    body.append(el('dl', { class: 'facts' },
      ...fact('Asked', size(r.current)),
      ...fact('Suggested', el('strong', { id: 'suggested' }, size(r.suggested))),
      ...(da ? fact('Dynamic allocation', `${da.minExecutors} to ${da.maxExecutors} executors`) : []),
      ...fact('Saving per run', `${r.saving.coreHoursPercent}% of the requested core-hours (${hours(r.saving.requestedCoreHoursPerRun)} → ${hours(r.saving.suggestedCoreHoursPerRun)}); GiB-hours ${hours(r.saving.requestedGibHoursPerRun)} → ${hours(r.saving.suggestedGibHoursPerRun)}`),
      ...fact('sizing.fromHistory', view.mode === 'apply' ? 'apply: admission uses it' : view.mode === 'off' ? 'off' : 'recommend: shown here, not used (set apply to use it)')));
    body.append(el('ul', {}, r.reasons.map((reason) => el('li', {}, reason))));
    body.append(el('h3', {}, 'Evidence'));
    body.append(el('table', { id: 'evidence' },
      el('thead', {}, el('tr', {}, ['Run', 'Duration', 'Peak heap', 'Peak RSS', 'Tasks at once', 'CPU used', 'Spill', 'GC'].map((h) => el('th', {}, h)))),
      el('tbody', {}, r.evidence.map((e) => el('tr', {},
        el('td', { class: 'name' }, el('a', { href: appHref(e.appName) }, e.appName)),
        el('td', {}, `${Math.round(e.durationMs / 1000)} s`),
        el('td', {}, `${e.peakJvmHeapMib} MiB`),
        el('td', {}, e.peakProcessRssMib ? `${e.peakProcessRssMib} MiB` : '—'),
        el('td', {}, `${e.peakTasksPerExecutor} / executor, ${e.peakTasks} in all`),
        el('td', {}, `${Math.round(e.cpuUtilization * 100)}% of cores held`),
        el('td', {}, `${e.spilledMib} MiB`),
        el('td', {}, `${(e.gcMs / 1000).toFixed(1)} s`))))));
  }
  return el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Sizing from past runs'), el('span', { class: 'muted' }, 'what the event logs of its last runs call for')), body);
}

async function drawChart(target, runs) {
  if (runs.length === 0) {
    target.append(el('p', { class: 'muted' }, 'No ended run recorded yet.'));
    return;
  }
  const uPlot = await loadUplot();
  const x = runs.map((_, i) => i + 1);
  const series = (key) => runs.map((run) => run[key] ?? null);
  const width = Math.max(320, target.clientWidth - 32);
  // eslint-disable-next-line no-new
  new uPlot({
    width, height: 260,
    scales: { x: { time: false } },
    axes: [{ label: 'Run', values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : '')) }, { label: 'core-hours', size: 70 }],
    series: [
      { label: 'run' },
      { label: 'requested core-hours', stroke: '#0969da', width: 2, points: { show: true } },
      { label: 'used core-hours', stroke: '#1a7f37', width: 2, points: { show: true } },
    ],
  }, [x, series('requestedCoreHours'), series('usedCoreHours')], target);
  target.append(el('table', { id: 'runs' },
    el('thead', {}, el('tr', {}, ['#', 'Run', 'State', 'Executor', 'Requested core-h', 'Used core-h', 'Requested GiB-h', 'Used GiB-h'].map((h) => el('th', {}, h)))),
    el('tbody', {}, runs.map((run, i) => el('tr', {},
      el('td', {}, String(i + 1)), el('td', { class: 'name' }, el('a', { href: appHref(run.appName) }, run.appName)), el('td', {}, run.state),
      el('td', {}, size(run.ran)), el('td', { class: 'num' }, hours(run.requestedCoreHours)), el('td', { class: 'num' }, hours(run.usedCoreHours)),
      el('td', { class: 'num' }, hours(run.requestedGibHours)), el('td', { class: 'num' }, hours(run.usedGibHours)))))));
}

export function jobPage(jobName) {
  document.title = `${jobName} · Submission Service`;
  async function start() {
    const view = await api(`/api/jobs/${encodeURIComponent(jobName)}/recommendation`);
    const chart = el('div', { class: 'body', id: 'cost-chart' });
    show(el('div', { id: 'job-view', 'data-job': jobName },
      el('p', {}, el('a', { href: `/dashboard/?job=${encodeURIComponent(jobName)}` }, '← Runs of this job')),
      el('div', { class: 'title-row' }, el('h1', {}, `Job ${jobName}`)),
      recommendationCard(view),
      el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Cost per run'), el('span', { class: 'muted' }, 'requested and used, oldest first')), chart)));
    await drawChart(chart, view.runs);
    chart.dataset.ready = 'true';
  }
  return { start, stop: () => {} };
}
