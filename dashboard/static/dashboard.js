// The dashboard's only script. It reads the REST API under /api/ and builds the page with DOM
// calls: data is only ever set as text, never parsed as HTML.
const REFRESH_MS = 3000;
const ACTIVE = new Set(['PENDING', 'RUNNING']);
const main = document.getElementById('main');
let timer = null;

/** el('td', { class: 'x' }, 'text', otherNode): an element whose string children are text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...nodes) {
  main.replaceChildren(...nodes);
}

function badge(state) {
  const known = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'].includes(state) ? state : 'UNKNOWN';
  return el('span', { class: `badge state-${known}`, 'data-state': state }, state ?? 'UNKNOWN');
}

function when(iso) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const two = (n) => String(n).padStart(2, '0');
  const text = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  return el('time', { datetime: iso, title: iso }, text); // local time; the tooltip has UTC
}

class HttpError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, init) {
  // The custom header is the service's CSRF check for writes made with the session cookie.
  const res = await fetch(path, { credentials: 'same-origin', ...init, headers: { accept: 'application/json', 'x-requested-with': 'dashboard', ...(init?.headers ?? {}) } });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try { message = (await res.json()).message ?? message; } catch { /* not JSON */ }
    throw new HttpError(res.status, message);
  }
  return res.status === 204 ? null : res.json();
}

function schedule(fn) {
  clearTimeout(timer);
  timer = setTimeout(fn, REFRESH_MS);
}

// ---- sign-in (only when the service has authentication on) ----

function loginPage(message) {
  clearTimeout(timer);
  const input = el('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'current-password', required: true, placeholder: 'ssk_…' });
  const error = el('p', { class: 'notice', hidden: !message }, message ?? '');
  const form = el('form', { class: 'card login', id: 'login' },
    el('header', {}, el('h2', {}, 'Sign in')),
    el('div', { class: 'body' },
      el('p', { class: 'muted' }, 'This service needs an API key. It is checked once; the dashboard then keeps a session cookie.'),
      error,
      el('label', { for: 'key' }, 'API key'),
      input,
      el('button', { type: 'submit' }, 'Sign in')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('/dashboard/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: input.value }) });
      route();
    } catch (err) {
      error.hidden = false;
      error.textContent = err.message;
    }
  });
  show(form);
  input.focus();
}

async function signOut() {
  try { await api('/dashboard/logout', { method: 'POST' }); } finally { route(); }
}

// ---- the list, grouped by jobName ----

async function listPage() {
  document.title = 'Applications · Submission Service';
  const items = [];
  let cursor;
  // Newest first; a few pages at most, which is what a person can look at.
  for (let page = 0; page < 4; page++) {
    const query = new URLSearchParams({ limit: '500' });
    if (cursor) query.set('cursor', cursor);
    const body = await api(`/api/apps/?${query}`);
    items.push(...body.items);
    cursor = body.next;
    if (!cursor) break;
  }
  const groups = new Map();
  for (const app of items) {
    if (!groups.has(app.jobName)) groups.set(app.jobName, []);
    groups.get(app.jobName).push(app);
  }
  const running = items.filter((a) => ACTIVE.has(a.state)).length;
  const head = el('div', { class: 'toolbar' },
    el('h1', {}, 'Applications'),
    el('span', { class: 'muted', id: 'summary' },
      `${items.length} application${items.length === 1 ? '' : 's'} in ${groups.size} job${groups.size === 1 ? '' : 's'}, ${running} active · refreshes every ${REFRESH_MS / 1000} s`));
  if (items.length === 0) {
    show(head, el('div', { class: 'empty', id: 'empty' },
      el('p', {}, 'No applications yet.'),
      el('p', {}, 'Submit one with ', el('code', {}, 'POST /api/apps/'), ' and it appears here.')));
    return;
  }
  const cards = [...groups].map(([jobName, apps]) => el('section', { class: 'card job', 'data-job': jobName },
    el('header', {}, el('h2', {}, jobName), el('span', { class: 'muted' }, `${apps.length} application${apps.length === 1 ? '' : 's'}`)),
    el('table', {},
      el('thead', {}, el('tr', {}, el('th', {}, 'Application'), el('th', {}, 'State'), el('th', {}, 'Created'),
        el('th', {}, 'Started'), el('th', {}, 'Ended'), el('th', { class: 'num' }, 'Executors'))),
      el('tbody', {}, apps.map((app) => el('tr', { 'data-app': app.appName },
        el('td', { class: 'name' }, el('a', { href: `/dashboard/apps/${encodeURIComponent(app.appName)}` }, app.appName)),
        el('td', {}, badge(app.state)),
        el('td', {}, when(app.createdAt)),
        el('td', {}, when(app.startedAt)),
        el('td', {}, when(app.endedAt)),
        el('td', { class: 'num' }, String(app.runningExecutors ?? 0))))))));
  show(head, ...cards);
}

// ---- one application ----

let follower = null; // { appName, controller } of the log being streamed

function streamLog(appName, pre, status) {
  if (follower?.appName === appName) return;
  follower?.controller.abort();
  const controller = new AbortController();
  follower = { appName, controller };
  (async () => {
    try {
      const res = await fetch(`/api/apps/${encodeURIComponent(appName)}/log?follow=true`, { credentials: 'same-origin', signal: controller.signal });
      if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
      status.textContent = 'streaming…';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // Follow the end only if the reader was already there (so scrolling up to read works).
        const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
        pre.append(document.createTextNode(value));
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      status.textContent = 'log ended';
    } catch (err) {
      if (controller.signal.aborted) return;
      status.textContent = `log unavailable: ${err.message}`;
    }
  })();
}

async function appPage(appName) {
  document.title = `${appName} · Submission Service`;
  const app = await api(`/api/apps/${encodeURIComponent(appName)}`);
  const existing = document.getElementById('app-view');
  if (existing?.dataset.app === appName) {
    updateFacts(app);
  } else {
    const log = el('pre', { class: 'log', id: 'log', 'aria-live': 'polite' });
    const logStatus = el('span', { class: 'muted', id: 'log-status' }, 'connecting…');
    show(el('div', { id: 'app-view', 'data-app': appName },
      el('p', {}, el('a', { href: '/dashboard/' }, '← All applications')),
      el('div', { class: 'title-row' },
        el('h1', {}, appName), el('span', { id: 'state' }), el('span', { class: 'spacer' }),
        el('button', { type: 'button', class: 'danger', id: 'stop', hidden: true, onclick: () => stop(appName) }, 'Stop')),
      el('p', { class: 'notice', id: 'stop-error', hidden: true }),
      el('div', { class: 'grid2' },
        el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Status')), el('div', { class: 'body' }, el('dl', { class: 'facts', id: 'facts' }))),
        el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Configuration')), el('pre', { class: 'json', id: 'config' }, JSON.stringify(app.config ?? {}, null, 2)))),
      el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Driver log'), logStatus), log)));
    updateFacts(app);
    streamLog(appName, log, logStatus);
  }
  if (!ACTIVE.has(app.state)) return false; // nothing more will change
  return true;
}

function updateFacts(app) {
  document.getElementById('state').replaceChildren(badge(app.state));
  document.getElementById('stop').hidden = !ACTIVE.has(app.state);
  const fact = (name, value) => [el('dt', {}, name), el('dd', {}, value)];
  document.getElementById('facts').replaceChildren(
    ...fact('Job', app.jobName),
    ...fact('Config template', app.configTemplateName || '—'),
    ...fact('State', app.state),
    ...(app.stateDetail ? fact('Detail', app.stateDetail) : []),
    ...fact('Created', when(app.createdAt)),
    ...fact('Started', when(app.startedAt)),
    ...fact('Ended', when(app.endedAt)),
    ...fact('Running executors', String(app.runningExecutors ?? 0)));
}

async function stop(appName) {
  const button = document.getElementById('stop');
  const error = document.getElementById('stop-error');
  if (!confirm(`Stop ${appName}?`)) return;
  button.disabled = true;
  try {
    await api(`/api/apps/${encodeURIComponent(appName)}/stop`, { method: 'POST' });
    error.hidden = true;
  } catch (err) {
    error.hidden = false;
    error.textContent = `Could not stop: ${err.message}`;
  } finally {
    button.disabled = false;
    route();
  }
}

// ---- routing ----

async function route() {
  clearTimeout(timer);
  const path = location.pathname;
  const match = /^\/dashboard\/apps\/([^/]+)\/?$/.exec(path);
  if (!match && follower) { follower.controller.abort(); follower = null; }
  try {
    const session = await api('/dashboard/session');
    document.getElementById('logout').hidden = !(session.authEnabled && session.signedIn);
    if (!session.signedIn) return loginPage();
    const again = match ? await appPage(decodeURIComponent(match[1])) : (await listPage(), true);
    if (again) schedule(route);
  } catch (err) {
    if (err.status === 401) return loginPage('Your session has ended: sign in again.');
    if (match && document.getElementById('app-view') && err.status !== 404) return schedule(route); // keep the log
    const notice = el('p', { class: 'notice', id: 'error' }, err.status === 404 ? 'No such application.' : `Could not load: ${err.message}`);
    if (err.status === 404) return show(el('p', {}, el('a', { href: '/dashboard/' }, '← All applications')), notice);
    show(notice);
    schedule(route);
  }
}

document.getElementById('logout').addEventListener('click', signOut);
route();
