// Shared helpers of the dashboard's scripts. Data is only ever set as text, never parsed as HTML.
export const STATES = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'];
export const ACTIVE = new Set(['PENDING', 'RUNNING']);
/** The label the notebook gateway puts on a kernel's application. */
export const KERNEL_LABEL = 'kernel.submission-service.io/id';
export const main = document.getElementById('main');

/** el('td', { class: 'x' }, 'text', otherNode): an element whose string children are text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function show(...nodes) {
  main.replaceChildren(...nodes);
}

/** The state as text on a coloured badge (colour is never the only cue). */
export function badge(state) {
  const known = STATES.includes(state) ? state : 'UNKNOWN';
  return el('span', { class: `badge state-${known}`, 'data-state': state }, state ?? 'UNKNOWN');
}

export function when(iso) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const two = (n) => String(n).padStart(2, '0');
  const text = `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  return el('time', { datetime: iso, title: iso }, text); // local time; the tooltip has UTC
}

/** "1 h 02 min", "3 min 05 s", "12 s"; from start to end, or to now while it runs. */
export function duration(app, now = Date.now()) {
  if (!app.startedAt) return '—';
  const end = app.endedAt ? Date.parse(app.endedAt) : now;
  let s = Math.max(0, Math.round((end - Date.parse(app.startedAt)) / 1000));
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const two = (n) => String(n).padStart(2, '0');
  if (h) return `${h} h ${two(m)} min`;
  if (m) return `${m} min ${two(s)} s`;
  return `${s} s`;
}

export const isKernel = (app) => Boolean(app.labels && app.labels[KERNEL_LABEL]);
/** The label the Spark Connect endpoint puts on a session's application (its value: the client's session id, or `warm`). */
export const CONNECT_SESSION_LABEL = 'connect.submission-service.io/session';
/** A Connect session's application, or a warm pool's server waiting for one (`warm`); null for any other. */
export const connectSession = (app) => {
  const session = app.labels && app.labels[CONNECT_SESSION_LABEL];
  if (!session) return null;
  return session === 'warm' ? { text: 'Connect (warm pool)', title: 'a Spark Connect server the warm pool keeps for the next session' } : { text: 'Connect', title: `a Spark Connect session (${session})` };
};

export class HttpError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

export async function api(path, init) {
  // x-requested-with is the service's CSRF check for writes made with the session cookie.
  const res = await fetch(path, { credentials: 'same-origin', ...init, headers: { accept: 'application/json', 'x-requested-with': 'dashboard', ...(init?.headers ?? {}) } });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try { message = (await res.json()).message ?? message; } catch { /* not JSON */ }
    throw new HttpError(res.status, message);
  }
  return res.status === 204 ? null : res.json();
}

export const appHref = (appName) => `/dashboard/apps/${encodeURIComponent(appName)}`;
