// Each job's schedules on the list page: cron, time zone, next run, and a pause/resume button
// (POST /api/schedules/{name}/pause|resume). Read once with the page and again after a click.
import { api, el, when } from './dom.js';

/** jobName -> the schedules (of this key; an admin: all) that submit it; none when the service has no schedules. */
export async function loadSchedules() {
  const byJob = new Map();
  let list;
  try { list = await api('/api/schedules/'); } catch (err) { if (err.status === 404) return byJob; throw err; }
  for (const s of list.items) {
    if (!byJob.has(s.jobName)) byJob.set(s.jobName, []);
    byJob.get(s.jobName).push(s);
  }
  return byJob;
}

/** One line per schedule of the job; `changed` runs after a pause or resume went through. */
export function scheduleLines(schedules, changed) {
  if (!schedules?.length) return null;
  return el('ul', { class: 'schedules' }, schedules.map((s) => {
    const button = el('button', { type: 'button', class: 'pause', 'data-schedule': s.name }, s.suspend ? 'Resume' : 'Pause');
    button.addEventListener('click', async () => {
      button.disabled = true;
      try { await api(`/api/schedules/${encodeURIComponent(s.name)}/${s.suspend ? 'resume' : 'pause'}`, { method: 'POST' }); } finally { button.disabled = false; }
      changed();
    });
    return el('li', { 'data-schedule': s.name },
      el('span', { class: 'muted' }, 'Schedule '), el('code', { title: s.name }, s.schedule), ` (${s.timeZone || 'UTC'}) · `,
      s.suspend ? el('span', { class: 'badge state-KILLED' }, 'paused') : el('span', {}, 'next run ', when(s.nextRunAt)), ' ', button);
  }));
}
