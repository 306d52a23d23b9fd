// /dashboard/apps/{appName}: state and timeline, the configuration as a collapsible tree with
// a copy button, the live driver log (follows the end unless the reader scrolled up; resumes
// from the last byte after a lost connection; the whole log as a download), stop and delete.
// The state is kept current by the events stream of the app's job.
import { ACTIVE, api, badge, connectSession, duration, el, isKernel, show, when } from './dom.js';

/** Bytes of log kept in the page; older text is dropped (the download has all of it). */
const LOG_KEEP = 1024 * 1024;

function jsonTree(value, key) {
  const label = key === undefined ? null : el('span', { class: 'k' }, `${key}: `);
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return el('div', { class: 'leaf' }, label, `${open}${close}`);
    return el('details', { open: true },
      el('summary', {}, label, `${open} `, el('span', { class: 'muted' }, `${entries.length} ${Array.isArray(value) ? 'item' : 'key'}${entries.length === 1 ? '' : 's'}`)),
      el('div', { class: 'children' }, entries.map(([k, v]) => jsonTree(v, k))),
      el('div', {}, close));
  }
  return el('div', { class: 'leaf' }, label, el('span', { class: `v ${value === null ? 'null' : typeof value}` }, JSON.stringify(value)));
}

export function appPage(appName, session) {
  document.title = `${appName} · Submission Service`;
  let app = null;
  let source = null;
  let log = null;
  let closed = false;

  const state = el('span', { id: 'state' });
  const stopButton = el('button', { type: 'button', class: 'danger', id: 'stop', hidden: true }, 'Stop');
  const deleteButton = el('button', { type: 'button', id: 'delete' }, 'Delete');
  const sparkUi = el('a', { id: 'spark-ui', class: 'button', hidden: true, href: `/dashboard/apps/${encodeURIComponent(appName)}/spark-ui/`, target: '_blank', rel: 'noopener' }, 'Spark UI');
  const actionError = el('p', { class: 'notice', id: 'action-error', role: 'alert', hidden: true });
  const facts = el('dl', { class: 'facts', id: 'facts' });
  const config = el('div', { class: 'json', id: 'config' });
  const copy = el('button', { type: 'button', id: 'copy-config' }, 'Copy JSON');
  const logPre = el('pre', { class: 'log', id: 'log', tabindex: '0', 'aria-label': 'Driver log' });
  const logStatus = el('span', { class: 'muted', id: 'log-status', 'aria-live': 'polite' }, 'connecting…');
  const followNote = el('button', { type: 'button', id: 'follow', class: 'link', hidden: true }, 'Paused: you scrolled up. Follow the end again');

  function renderFacts() {
    const session = connectSession(app);
    state.replaceChildren(badge(app.state), isKernel(app) ? el('span', { class: 'tag kernel' }, 'notebook kernel') : '',
      session ? el('span', { class: 'tag connect', title: session.title }, `Spark ${session.text}`) : '');
    stopButton.hidden = !ACTIVE.has(app.state);
    // The same link serves the running driver's UI and, after the end, the run's history.
    const ui = app.sparkUi ?? { state: app.state === 'RUNNING' ? 'live' : 'unavailable' };
    sparkUi.hidden = ui.state === 'unavailable';
    sparkUi.textContent = ui.state === 'history' ? 'Spark UI (history)' : 'Spark UI (live)';
    sparkUi.title = ui.state === 'history'
      ? `The run's history, from its event log${ui.expiresAt ? `; kept until ${when(ui.expiresAt)}` : ''}`
      : 'The running driver\'s own UI';
    const fact = (name, value) => [el('dt', {}, name), el('dd', {}, value)];
    const transitions = Array.isArray(app.transitions) ? app.transitions : [];
    // Retries (restartPolicy OnFailure): every attempt once there is more than one.
    const attempts = Array.isArray(app.attempts) && (app.attempt ?? 1) > 1 ? app.attempts : [];
    const attemptEnd = (a) => `${a.endedAt ? when(a.endedAt) : 'running'}${a.reason ? `: ${a.reason}` : ''}${a.exitCode != null ? `, exit code ${a.exitCode}` : ''}${a.counted === false ? ' (not counted)' : ''}`;
    facts.replaceChildren(
      ...fact('Job', [el('a', { href: `/dashboard/?job=${encodeURIComponent(app.jobName)}` }, app.jobName), ' · ', el('a', { href: `/dashboard/jobs/${encodeURIComponent(app.jobName)}`, id: 'job-page' }, 'sizing and cost')]),
      ...(app.cost ? fact('Cost', `${app.cost.requestedCoreHours} core-h and ${app.cost.requestedGibHours} GiB-h requested; ${app.cost.usedCoreHours ?? '—'} core-h and ${app.cost.usedGibHours ?? '—'} GiB-h used`) : []),
      ...fact('Config template', app.configTemplateName || '—'),
      ...fact('State', app.state),
      ...(app.stateDetail ? fact('Detail', app.stateDetail) : []),
      ...((app.attempt ?? 1) > 1 ? fact('Attempt', String(app.attempt)) : []),
      ...attempts.flatMap((a) => fact(`Attempt ${a.attempt}`, `${when(a.startedAt)} → ${attemptEnd(a)}`)),
      ...fact('Created', when(app.createdAt)),
      ...fact('Started', when(app.startedAt)),
      ...fact('Ended', when(app.endedAt)),
      ...fact('Duration', duration(app)),
      ...transitions.flatMap((t) => fact(`→ ${t.state}`, when(t.at ?? t.time))),
      ...fact('Running executors', String(app.runningExecutors ?? 0)),
      ...(app.sparkUi?.expiresAt ? fact('Spark UI and log kept until', when(app.sparkUi.expiresAt)) : []),
      ...fact('Submitted by', app.submittedBy ?? '— (authentication off)'),
      ...fact('Labels', Object.keys(app.labels ?? {}).length ? Object.entries(app.labels).map(([k, v]) => el('code', { class: 'label' }, `${k}=${v}`)) : '—'));
  }

  async function act(what, run) {
    actionError.hidden = true;
    stopButton.disabled = deleteButton.disabled = true;
    try {
      await run();
    } catch (err) {
      actionError.hidden = false;
      actionError.textContent = `Could not ${what}: ${err.message}`;
    } finally {
      stopButton.disabled = deleteButton.disabled = false;
    }
  }
  stopButton.addEventListener('click', () => {
    if (!confirm(`Stop ${appName}?`)) return;
    void act('stop', async () => { app = await api(`/api/apps/${encodeURIComponent(appName)}/stop`, { method: 'POST' }); renderFacts(); });
  });
  deleteButton.addEventListener('click', () => {
    if (!confirm(`Delete ${appName} and its record?`)) return;
    void act('delete', async () => { await api(`/api/apps/${encodeURIComponent(appName)}`, { method: 'DELETE' }); location.assign('/dashboard/'); });
  });
  copy.addEventListener('click', async () => {
    const text = JSON.stringify(app?.config ?? {}, null, 2);
    try { await navigator.clipboard.writeText(text); copy.textContent = 'Copied'; } catch { copy.textContent = 'Copy failed'; }
    setTimeout(() => { copy.textContent = 'Copy JSON'; }, 1500);
  });

  // ---- the log ----
  // Follows the end only while the reader is at the end; scrolling up pauses that.
  let following = true;
  logPre.addEventListener('scroll', () => {
    const atEnd = logPre.scrollHeight - logPre.scrollTop - logPre.clientHeight < 24;
    following = atEnd;
    followNote.hidden = atEnd;
  });
  followNote.addEventListener('click', () => { following = true; followNote.hidden = true; logPre.scrollTop = logPre.scrollHeight; });
  // Text is gathered and put on the page once per frame (one layout per frame, however fast
  // the log arrives); only the last LOG_KEEP characters stay in the page.
  let kept = 0;
  let pending = [];
  let frame = 0;
  function flushLog() {
    frame = 0;
    const text = pending.join('');
    pending = [];
    logPre.append(document.createTextNode(text.length > LOG_KEEP ? text.slice(-LOG_KEEP) : text));
    kept += Math.min(text.length, LOG_KEEP);
    while (kept > LOG_KEEP && logPre.childNodes.length > 1) {
      const first = logPre.firstChild;
      kept -= first.textContent.length;
      first.remove();
      logPre.dataset.trimmed = 'true';
    }
    if (following) logPre.scrollTop = logPre.scrollHeight;
  }
  function appendLog(text) {
    pending.push(text);
    if (!frame) frame = requestAnimationFrame(flushLog);
  }
  function flushNow() {
    if (frame) { cancelAnimationFrame(frame); flushLog(); }
  }

  async function streamLog() {
    let offset = 0; // bytes received so far: where a reconnect resumes
    const decoder = new TextDecoder();
    for (let attempt = 0; !closed; attempt++) {
      const controller = new AbortController();
      log = controller;
      try {
        const res = await fetch(`/api/apps/${encodeURIComponent(appName)}/log?follow=true&offset=${offset}`, { credentials: 'same-origin', signal: controller.signal });
        if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
        logStatus.textContent = 'streaming…';
        const reader = res.body.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          offset += value.byteLength;
          appendLog(decoder.decode(value, { stream: true }));
        }
        if (!app || !ACTIVE.has(app.state)) {
          app = await api(`/api/apps/${encodeURIComponent(appName)}`);
          renderFacts();
        }
        if (!ACTIVE.has(app.state)) { flushNow(); logStatus.textContent = 'log ended'; return; }
      } catch (err) {
        if (closed) return;
        logStatus.textContent = `reconnecting (${err.message})…`;
      }
      // The stream ended while the app still runs (a replica went away, a proxy timed out): resume.
      await new Promise((ok) => setTimeout(ok, Math.min(5000, 250 * 2 ** Math.min(attempt, 5))));
    }
  }

  function follow() {
    // The job's events; this app's are picked out here (the stream filters by job, not by app).
    source = new EventSource(`/api/apps/events?jobName=${encodeURIComponent(app.jobName)}`);
    source.addEventListener('changed', (event) => {
      const changed = JSON.parse(event.data);
      if (changed.appName !== appName) return;
      app = changed;
      renderFacts();
    });
    source.addEventListener('deleted', (event) => {
      if (JSON.parse(event.data).appName !== appName) return;
      actionError.hidden = false;
      actionError.textContent = 'This application has been deleted.';
    });
  }

  function submissionCard(info) {
    const body = el('div', { class: 'body', id: 'submission' });
    const rows = [];
    const fact = (name, value) => rows.push(el('dt', {}, name), el('dd', {}, value));
    fact('Template', app.configTemplateName || '— (none)');
    // With the pod gone, what admission wrote may still be known (the controller keeps a copy on the Application).
    if (info.admittedBy) fact('Admission', `admitted by ${info.admittedBy}`);
    else if (!info.driverPod) fact('Admission', el('span', { class: 'muted' }, 'unknown: the driver pod is gone'));
    else fact('Admission', el('strong', { class: 'warn', id: 'missed-admission' }, '⚠ Missed admission: the driver pod has no submission-service/admitted-by mark (was the webhook down?)'));
    body.append(el('dl', { class: 'facts' }, rows));
    body.append(el('h3', {}, 'Overrides'));
    body.append(info.configOverrides === null ? el('p', { class: 'muted' }, 'Gone with the driver pod.')
      : el('div', { class: 'json', id: 'overrides', 'data-json': JSON.stringify(info.configOverrides) }, jsonTree(info.configOverrides)));
    body.append(el('h3', {}, 'Sizing'));
    if (!info.sizing) body.append(el('p', { class: 'muted' }, 'Not recorded: the driver pod missed admission, was admitted before admission recorded its decision, or is gone.'));
    else {
      for (const role of ['driver', 'executor']) {
        const s = info.sizing[role];
        body.append(el('div', { class: 'sizing', 'data-role': role },
          el('p', {}, el('strong', {}, role === 'driver' ? 'Driver' : 'Executors'), ` → ${s.pool ?? 'no pool'}`),
          el('ul', {}, s.reasons.map((r) => el('li', {}, r)))));
      }
    }
    return el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Submission'), el('span', { class: 'muted' }, 'what was asked, and how it was sized')), body);
  }

  async function start() {
    app = await api(`/api/apps/${encodeURIComponent(appName)}`);
    const info = await api(`/api/apps/${encodeURIComponent(appName)}/submission`);
    const canWrite = !session.authEnabled || session.signedIn;
    show(el('div', { id: 'app-view', 'data-app': appName },
      el('p', {}, el('a', { href: '/dashboard/' }, '← All applications')),
      el('div', { class: 'title-row' },
        el('h1', {}, appName), state, el('span', { class: 'spacer' }), sparkUi, canWrite ? stopButton : null, canWrite ? deleteButton : null),
      actionError,
      el('div', { class: 'grid2' },
        el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Status and timeline')), el('div', { class: 'body' }, facts)),
        el('section', { class: 'card' }, el('header', {}, el('h2', {}, 'Configuration'), el('span', { class: 'muted' }, 'effective, after template, defaults and sizing'), el('span', { class: 'spacer' }), copy), config)),
      submissionCard(info),
      el('section', { class: 'card' },
        el('header', {}, el('h2', {}, 'Driver log'), logStatus, el('span', { class: 'spacer' }), followNote,
          el('a', { href: `/api/apps/${encodeURIComponent(appName)}/log`, download: `${appName}.log`, id: 'download' }, 'Download whole log')),
        logPre)));
    config.dataset.json = JSON.stringify(app.config ?? {});
    config.replaceChildren(jsonTree(app.config ?? {}));
    renderFacts();
    follow();
    void streamLog();
    // The duration of a running app grows: redraw the facts every few seconds while it runs.
    ticker = setInterval(() => { if (ACTIVE.has(app.state)) renderFacts(); }, 5000);
  }

  let ticker = 0;
  return { start, stop: () => { closed = true; clearInterval(ticker); source?.close(); log?.abort(); } };
}
