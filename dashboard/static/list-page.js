// /dashboard/: applications grouped by jobName, newest first. Pages of light items
// (view=summary) by cursor; counts from /api/apps/counts; kept current by the events stream
// (no polling: with nothing changing, the page sends nothing). The search is the server's
// (`q`): it finds applications in pages not loaded yet, and the counts follow it.
import { ACTIVE, STATES, api, appHref, badge, connectSession, duration, el, isKernel, show, when } from './dom.js';
import { loadSchedules, scheduleLines } from './schedules.js';

/** Which Spark UI the application's link opens: its running driver's, or its run's history. */
function sparkUiTag(a) {
  const ui = a.sparkUi;
  if (!ui || ui.state === 'unavailable') return null;
  const href = `/dashboard/apps/${encodeURIComponent(a.appName)}/spark-ui/`;
  const title = ui.state === 'live' ? 'Spark UI of the running driver' : `Spark UI from the history${ui.expiresAt ? `, kept until ${when(ui.expiresAt)}` : ''}`;
  return el('a', { class: `tag ui-${ui.state}`, href, target: '_blank', rel: 'noopener', title }, ui.state === 'live' ? 'UI' : 'history');
}

const PAGE = 200;
const RUNS_SHOWN = 5;
const STRIP = 20;
const SEARCH_DELAY_MS = 250; // typing: one search per pause, not one per key

export function listPage(session) {
  document.title = 'Applications · Submission Service';
  const params = new URLSearchParams(location.search);
  const filter = { state: params.get('state') ?? '', jobName: params.get('job') ?? '', search: params.get('q') ?? '' };
  const items = new Map(); // appName -> summary
  let next = null;
  let counts = null;
  let source = null;
  let countsTimer = null;
  let frame = 0;
  let loading = false;
  let searchTimer = null;
  let generation = 0; // each restart; answers for an older filter are dropped
  let schedules = new Map(); // jobName -> its schedules (schedules.js)
  const reloadSchedules = () => loadSchedules().then((found) => { schedules = found; schedule(); }, report);

  const countsBox = el('div', { class: 'counts', id: 'counts', role: 'group', 'aria-label': 'Applications per state' });
  const jobSelect = el('select', { id: 'job-filter', 'aria-label': 'Job' });
  const search = el('input', {
    type: 'search', id: 'search', placeholder: 'Search names, jobs, label values ( / )', 'aria-label': 'Search applications by name, job or label value',
    maxlength: '100', value: filter.search, 'aria-keyshortcuts': '/',
  });
  const status = el('span', { class: 'muted', id: 'summary', 'aria-live': 'polite' });
  const problem = el('p', { class: 'notice', id: 'problem', role: 'alert', hidden: true });
  const groupsBox = el('div', { id: 'groups' });
  const more = el('button', { type: 'button', id: 'more', hidden: true }, 'Load older applications');

  const setUrl = () => {
    const q = new URLSearchParams();
    if (filter.state) q.set('state', filter.state);
    if (filter.jobName) q.set('job', filter.jobName);
    if (filter.search) q.set('q', filter.search);
    history.replaceState(null, '', `/dashboard/${q.size ? `?${q}` : ''}`);
  };
  const matches = (app) => (!filter.state || app.state === filter.state) && (!filter.jobName || app.jobName === filter.jobName) && searched(app);
  // The server's search (cluster/paging.ts), for changes that arrive by events and for the
  // loaded items while a search is typed.
  const searched = (app) => {
    const q = filter.search.toLowerCase();
    if (!q) return true;
    return app.appName.toLowerCase().includes(q) || app.jobName.toLowerCase().includes(q)
      || Object.values(app.labels ?? {}).some((v) => v.toLowerCase().includes(q));
  };

  function fetchPage(cursor) {
    const q = new URLSearchParams({ limit: String(PAGE), view: 'summary' });
    if (filter.state) q.set('state', filter.state);
    if (filter.jobName) q.set('jobName', filter.jobName);
    if (filter.search) q.set('q', filter.search);
    if (cursor) q.set('cursor', cursor);
    return api(`/api/apps/?${q}`);
  }

  // Counts of every job (the job list needs them all), within the search.
  const fetchCounts = () => api(`/api/apps/counts${filter.search ? `?${new URLSearchParams({ q: filter.search })}` : ''}`);

  async function loadCounts() {
    const gen = generation;
    const body = await fetchCounts();
    if (gen !== generation) return;
    counts = body;
    renderCounts();
  }

  function renderCounts() {
    if (!counts) return;
    const total = counts.total;
    const button = (state, label, n) => el('button', {
      type: 'button', class: `count ${state ? `state-${state}` : ''}`, 'data-state': state || 'ALL',
      'aria-pressed': String(filter.state === state), onclick: () => { filter.state = filter.state === state && state ? '' : state; reload(); },
    }, el('span', { class: 'n' }, String(n)), ` ${label}`);
    countsBox.replaceChildren(button('', 'all', total), ...STATES.map((s) => button(s, s.toLowerCase(), counts.byState[s] ?? 0)));
    const current = filter.jobName;
    jobSelect.replaceChildren(el('option', { value: '' }, `All jobs (${counts.jobs.length})`),
      ...counts.jobs.map((j) => el('option', { value: j.jobName, selected: j.jobName === current }, `${j.jobName} (${j.total})`)));
  }

  function render() {
    frame = 0;
    const visible = [...items.values()].filter(matches)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.appName.localeCompare(a.appName));
    const groups = new Map();
    for (const app of visible) {
      if (!groups.has(app.jobName)) groups.set(app.jobName, []);
      groups.get(app.jobName).push(app);
    }
    const active = visible.filter((a) => ACTIVE.has(a.state)).length;
    const found = filter.search ? ` matching “${filter.search}”` : '';
    status.textContent = `${visible.length} shown${found} in ${groups.size} job${groups.size === 1 ? '' : 's'} · ${active} active${next ? ' · older ones not loaded yet' : ''} · live`;
    more.hidden = !next;
    if (visible.length === 0) {
      const filtered = filter.state || filter.jobName || filter.search;
      groupsBox.replaceChildren(el('div', { class: 'empty', id: 'empty' },
        filtered ? el('p', {}, 'No application matches these filters.') : el('p', {}, 'No applications yet.'),
        filtered ? el('p', {}, el('button', { type: 'button', onclick: () => { Object.assign(filter, { state: '', jobName: '', search: '' }); search.value = ''; reload(); } }, 'Clear filters'))
          : el('p', {}, 'Submit one with ', el('code', {}, 'POST /api/apps/'), ' (or ', el('code', {}, 'submission-service apps submit'), ') and it appears here at once.')));
      return;
    }
    const now = Date.now();
    groupsBox.replaceChildren(...[...groups].map(([jobName, apps]) => jobCard(jobName, apps, now)));
  }

  function connectTag(a) {
    const session = connectSession(a);
    return session ? el('span', { class: 'tag connect', title: session.title }, session.text) : null;
  }

  function jobCard(jobName, apps, now) {
    const perJob = counts?.jobs.find((j) => j.jobName === jobName);
    const failing = apps[0]?.state === 'FAILED';
    const strip = el('ol', { class: 'strip', 'aria-label': `Last ${Math.min(STRIP, apps.length)} runs, newest first` },
      apps.slice(0, STRIP).map((a) => el('li', {},
        el('a', { href: appHref(a.appName), class: `tick state-${a.state}`, title: `${a.appName}: ${a.state}` },
          el('span', { class: 'sr-only' }, `${a.appName}: ${a.state}`), a.state[0]))));
    const rows = apps.slice(0, RUNS_SHOWN).map((a) => el('tr', { 'data-app': a.appName },
      el('td', { class: 'name' }, el('a', { href: appHref(a.appName) }, a.appName), isKernel(a) ? el('span', { class: 'tag kernel', title: 'a notebook kernel' }, 'kernel') : null, connectTag(a), sparkUiTag(a)),
      el('td', {}, badge(a.state)),
      el('td', {}, when(a.startedAt ?? a.createdAt)),
      el('td', { class: 'num' }, duration(a, now))));
    const hidden = apps.length - RUNS_SHOWN;
    return el('section', { class: 'card job', 'data-job': jobName },
      el('header', {},
        el('h2', {}, el('a', { href: `/dashboard/?job=${encodeURIComponent(jobName)}`, onclick: (e) => { e.preventDefault(); filter.jobName = jobName; reload(); } }, jobName)),
        failing ? el('span', { class: 'badge state-FAILED' }, 'last run failed') : null,
        el('span', { class: 'muted' }, `${perJob?.total ?? apps.length} run${(perJob?.total ?? apps.length) === 1 ? '' : 's'}`),
        el('span', { class: 'spacer' }), strip),
      scheduleLines(schedules.get(jobName), reloadSchedules),
      el('table', {},
        el('thead', {}, el('tr', {}, el('th', {}, 'Application'), el('th', {}, 'State'), el('th', {}, 'Started'), el('th', { class: 'num' }, 'Duration'))),
        el('tbody', {}, rows)),
      hidden > 0 ? el('p', { class: 'more-runs muted' }, `${hidden} more loaded · `,
        el('a', { href: `/dashboard/?job=${encodeURIComponent(jobName)}`, onclick: (e) => { e.preventDefault(); filter.jobName = jobName; reload(); } }, 'show this job only')) : null);
  }

  const schedule = () => { if (!frame) frame = requestAnimationFrame(render); };
  const scheduleCounts = () => {
    clearTimeout(countsTimer);
    countsTimer = setTimeout(() => loadCounts().catch(report), 1000); // one read per burst of changes
  };

  function follow() {
    source?.close();
    const q = new URLSearchParams();
    if (filter.jobName) q.set('jobName', filter.jobName);
    if (filter.search) q.set('q', filter.search); // the server drops the changes no one here shows
    // EventSource reconnects by itself with Last-Event-ID; 'reset' means: read everything again.
    source = new EventSource(`/api/apps/events${q.size ? `?${q}` : ''}`);
    source.addEventListener('changed', (event) => {
      const { config: _config, ...app } = JSON.parse(event.data);
      const oldest = [...items.values()].reduce((min, a) => (a.createdAt < min ? a.createdAt : min), '\uffff');
      if (matches(app) && (items.has(app.appName) || !next || app.createdAt >= oldest)) items.set(app.appName, app);
      else items.delete(app.appName); // left the state filter
      schedule();
      scheduleCounts();
    });
    source.addEventListener('deleted', (event) => {
      items.delete(JSON.parse(event.data).appName);
      schedule();
      scheduleCounts();
    });
    source.addEventListener('reset', () => reload(false));
  }

  // The shown items are replaced only when the new answers are in (no flash of an empty list),
  // and only by the answers to the newest filter.
  async function restart(resubscribe = true) {
    const gen = ++generation;
    clearTimeout(searchTimer);
    setUrl();
    renderCounts();
    if (resubscribe) follow();
    const [page, newCounts] = await Promise.all([fetchPage(null), fetchCounts()]);
    if (gen !== generation) return;
    items.clear();
    for (const app of page.items) items.set(app.appName, app);
    next = page.next;
    counts = newCounts;
    renderCounts();
    render();
  }

  // A read that fails after the first render: an ended session shows the sign-in again (the
  // entry script asks for it on reload); anything else is said on the page, not swallowed.
  function report(err) {
    if (err?.status === 401) { location.reload(); return; }
    problem.hidden = false;
    problem.textContent = `Could not load: ${err?.message ?? err}`;
  }
  const reload = (resubscribe = true) => {
    problem.hidden = true;
    restart(resubscribe).catch(report);
  };

  const applySearch = (value, delay) => {
    if (value === filter.search && delay > 0) return; // a space typed: the pending search stands
    clearTimeout(searchTimer);
    filter.search = value;
    setUrl();
    schedule(); // narrow what is loaded at once; the server's answer follows
    searchTimer = setTimeout(() => reload(), delay); // a new search: a new stream too
  };
  search.addEventListener('input', () => applySearch(search.value.trim(), SEARCH_DELAY_MS));
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') applySearch(search.value.trim(), 0);
    if (e.key === 'Escape' && search.value) { e.preventDefault(); search.value = ''; applySearch('', 0); }
  });
  // "/" focuses the search from anywhere on the page but a field.
  const slash = (e) => {
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName ?? '')) return;
    e.preventDefault();
    search.focus();
  };
  document.addEventListener('keydown', slash);
  jobSelect.addEventListener('change', () => { filter.jobName = jobSelect.value; reload(); });
  more.addEventListener('click', async () => {
    if (loading || !next) return;
    loading = true;
    more.disabled = true;
    const gen = generation;
    try {
      const page = await fetchPage(next);
      if (gen !== generation) return;
      for (const app of page.items) items.set(app.appName, app);
      next = page.next;
      render();
    } catch (err) {
      report(err);
    } finally { more.disabled = false; loading = false; }
  });

  show(
    el('div', { class: 'toolbar' }, el('h1', {}, 'Applications'), status),
    problem,
    countsBox,
    el('div', { class: 'filters' }, el('label', { for: 'job-filter' }, 'Job'), jobSelect, el('label', { for: 'search' }, 'Search'), search),
    groupsBox, more);
  // Durations of running applications grow: redraw every 5 s while any is shown (no request).
  const ticker = setInterval(() => { if ([...items.values()].some((a) => a.state === 'RUNNING')) schedule(); }, 5000);
  return {
    start: () => { void reloadSchedules(); return restart(); },
    stop: () => { source?.close(); clearTimeout(countsTimer); clearTimeout(searchTimer); clearInterval(ticker); document.removeEventListener('keydown', slash); if (frame) cancelAnimationFrame(frame); },
  };
}
