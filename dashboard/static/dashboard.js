// The dashboard's entry script: asks whether a sign-in is needed, then shows the list
// (list-page.js), one application (app-page.js) or one job (job-page.js). Pages are plain links; each page builds
// itself from the API and follows the events stream.
import { api, el, show } from './dom.js';
import { appPage } from './app-page.js';
import { jobPage } from './job-page.js';
import { listPage } from './list-page.js';

function loginPage(message) {
  const input = el('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'current-password', required: true, placeholder: 'ssk_…' });
  const error = el('p', { class: 'notice', role: 'alert', hidden: !message }, message ?? '');
  const form = el('form', { class: 'card login', id: 'login' },
    el('header', {}, el('h2', {}, 'Sign in')),
    el('div', { class: 'body' },
      el('p', { class: 'muted' }, 'This service needs an API key. It is checked once; the dashboard then keeps a signed session cookie for 12 hours.'),
      error,
      el('label', { for: 'key' }, 'API key'),
      input,
      el('button', { type: 'submit' }, 'Sign in')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await api('/dashboard/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: input.value }) });
      location.reload();
    } catch (err) {
      error.hidden = false;
      error.textContent = err.message;
    }
  });
  show(form);
  input.focus();
}

async function main() {
  let session;
  try {
    session = await api('/dashboard/session');
  } catch (err) {
    return show(el('p', { class: 'notice', id: 'error' }, `Could not reach the service: ${err.message}`));
  }
  document.getElementById('auth-off').hidden = session.authEnabled;
  const logout = document.getElementById('logout');
  logout.hidden = !(session.authEnabled && session.signedIn);
  logout.addEventListener('click', async () => {
    try { await api('/dashboard/logout', { method: 'POST' }); } finally { location.assign('/dashboard/'); }
  });
  if (session.keyId) document.getElementById('who').textContent = `key ${session.keyId} (${session.role})`;
  if (!session.signedIn) return loginPage();
  const match = /^\/dashboard\/apps\/([^/]+)\/?$/.exec(location.pathname);
  const job = /^\/dashboard\/jobs\/([^/]+)\/?$/.exec(location.pathname);
  const page = match ? appPage(decodeURIComponent(match[1]), session) : job ? jobPage(decodeURIComponent(job[1])) : listPage(session);
  addEventListener('pagehide', () => page.stop());
  try {
    await page.start();
  } catch (err) {
    if (err.status === 401) return loginPage('Your session has ended: sign in again.');
    const notice = el('p', { class: 'notice', id: 'error', role: 'alert' }, err.status === 404 ? (job ? 'No such job (or none of its runs are yours).' : 'No such application.') : `Could not load: ${err.message}`);
    show(el('p', {}, el('a', { href: '/dashboard/' }, '← All applications')), notice);
  }
}

void main();
