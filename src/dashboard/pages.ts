/**
 * The pages, as pure functions from data to HTML: overview, job list, job detail, schedules,
 * login and errors. No I/O here; the routes in app.ts fetch through the client admin API.
 * Every value is interpolated through `html`, so payloads and error texts arrive escaped.
 */
import { html } from 'hono/html';
import type { AlertStateRow, AttemptRow, EffectRow, JobCount, JobRow, QueueState, WorkerRow } from '../core/storage.js';
import type { ScheduleRow } from '../core/schedules.js';
import type { JobStatus } from '../core/status.js';
import { JOB_STATUSES } from '../core/status.js';
import type { Html, PageContext } from './layout.js';
import { ago, duration, iso, json, layout, plainPage, statusBadge, time, truncate } from './layout.js';

/** Workers whose heartbeat is older than this are shown as silent and do not count as live. */
export const LIVE_WITHIN_MS = 60_000;

export interface Unhandled {
  type: string;
  queue: string;
  due: number;
}

const RETRYABLE = new Set(['queued', 'failed', 'dead', 'cancelled']);
const CANCELLABLE = new Set(['queued', 'failed', 'running']);

function q(params: Record<string, string | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
}

function sum(counts: readonly JobCount[], by: (c: JobCount) => string, alsoKeys: readonly string[] = []): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>(alsoKeys.map((k) => [k, new Map<string, number>()]));
  for (const c of counts) {
    const k = by(c);
    const row = out.get(k) ?? new Map<string, number>();
    row.set(c.status, (row.get(c.status) ?? 0) + c.count);
    out.set(k, row);
  }
  return out;
}

function countsTable(ctx: PageContext, label: string, param: 'queue' | 'type', rows: Map<string, Map<string, number>>, extra?: (key: string) => Html): Html {
  if (rows.size === 0) return html`<p class="muted">No jobs yet.</p>`;
  const keys = [...rows.keys()].sort();
  return html`<table><thead><tr><th>${label}</th>${JOB_STATUSES.map((s) => html`<th class="num">${s}</th>`)}${extra ? html`<th>State</th>` : ''}</tr></thead><tbody>
${keys.map((k) => {
  const r = rows.get(k) ?? new Map<string, number>();
  return html`<tr><td><a href="${ctx.base}/jobs${q({ [param]: k })}">${k}</a></td>${JOB_STATUSES.map((s) => {
    const n = r.get(s) ?? 0;
    return html`<td class="num">${n ? html`<a href="${ctx.base}/jobs${q({ [param]: k, status: s })}">${n}</a>` : html`<span class="muted">0</span>`}</td>`;
  })}${extra ? extra(k) : ''}</tr>`;
})}</tbody></table>`;
}

/** The queue table's state column: paused or not, and the button that flips it (absent without the API). */
function queueState(ctx: PageContext, queue: string, states: readonly QueueState[]): Html {
  const paused = states.find((s) => s.queue === queue)?.paused ?? false;
  const verb = paused ? 'resume' : 'pause';
  return html`<td>${paused ? html`<span class="err">paused</span>` : html`<span class="muted">active</span>`} <form class="inline" method="post" action="${ctx.base}/queues/${encodeURIComponent(queue)}/${verb}"><input type="hidden" name="csrf" value="${ctx.csrf}"><button class="${paused ? 'primary' : 'danger'}">${paused ? 'Resume' : 'Pause'}</button></form></td>`;
}

const QUEUE_NOTICES: Record<string, string> = { paused: 'The queue is paused: no worker starts its jobs until it is resumed.', resumed: 'The queue is resumed.' };

export function overviewPage(
  ctx: PageContext, counts: readonly JobCount[], workers: readonly WorkerRow[], unhandled: readonly Unhandled[], nowMs = Date.now(),
  alerts: readonly AlertStateRow[] = [], queues?: readonly QueueState[], notice?: string,
): Html {
  const totals = new Map<string, number>();
  let due = 0;
  for (const c of counts) {
    totals.set(c.status, (totals.get(c.status) ?? 0) + c.count);
    due += c.due;
  }
  const live = workers.filter((w) => nowMs - w.heartbeatAt.getTime() <= LIVE_WITHIN_MS);
  const body = html`<h1>Overview</h1>
${unhandled.length
  ? html`<div class="notice warn"><strong>${unhandled.reduce((a, u) => a + u.due, 0)} due job(s) wait for a worker that handles their type.</strong> They are not failed; they wait until a worker with a handler for the type (and queue) is running.
<table><thead><tr><th>Type</th><th>Queue</th><th class="num">Due</th></tr></thead><tbody>${unhandled.map((u) => html`<tr><td><a href="${ctx.base}/jobs${q({ type: u.type, queue: u.queue })}">${u.type}</a></td><td>${u.queue}</td><td class="num">${u.due}</td></tr>`)}</tbody></table></div>`
  : ''}
<div class="tiles">${JOB_STATUSES.map((s) => html`<a class="tile" href="${ctx.base}/jobs${q({ status: s })}"><div class="n">${totals.get(s) ?? 0}</div><div class="l">${statusBadge(s)}</div></a>`)}
<div class="tile"><div class="n">${due}</div><div class="l">due now</div></div>
<div class="tile"><div class="n">${live.length}</div><div class="l">live workers</div></div></div>
${alertsSection(alerts, nowMs)}
${notice && QUEUE_NOTICES[notice] ? html`<div class="notice">${QUEUE_NOTICES[notice]}</div>` : ''}
<h2>By queue</h2>${countsTable(ctx, 'Queue', 'queue', sum(counts, (c) => c.queue, queues?.map((q) => q.queue)), queues && ((k) => queueState(ctx, k, queues)))}
<h2>By type</h2>${countsTable(ctx, 'Type', 'type', sum(counts, (c) => c.type))}
<h2>Workers</h2>${workersTable(workers, nowMs)}`;
  return layout(ctx, 'Overview', 'overview', body);
}

/** Each alert rule's state (a rule that never fired has no row); firing ones first. */
function alertsSection(alerts: readonly AlertStateRow[], nowMs: number): Html | string {
  if (alerts.length === 0) return '';
  const firing = alerts.filter((a) => a.state === 'firing');
  const rows = [...firing, ...alerts.filter((a) => a.state !== 'firing')];
  return html`<h2>Alerts</h2>${firing.length ? html`<div class="notice bad"><strong>${firing.length} alert(s) firing.</strong> Notifications went to the configured log, callback and webhooks.</div>` : ''}
<table><thead><tr><th>Rule</th><th>State</th><th>Since</th><th class="num">Value</th><th class="num">Episode</th></tr></thead><tbody>
${rows.map((a) => html`<tr><td class="mono">${a.rule}</td><td><span class="badge ${a.state === 'firing' ? 's-dead' : 's-succeeded'}">${a.state}</span></td><td>${time(a.since)} <span class="muted">${ago(a.since, nowMs)}</span></td><td class="num">${a.value === null ? '—' : String(Math.round(a.value * 1000) / 1000)}</td><td class="num">${a.episode}</td></tr>`)}
</tbody></table>`;
}

function workersTable(workers: readonly WorkerRow[], nowMs: number): Html {
  if (workers.length === 0) return html`<p class="muted">No worker has registered. Start one with <code>leasehold worker --handlers ./jobs.js</code>.</p>`;
  return html`<table><thead><tr><th>Worker</th><th>Host / pid</th><th>Version</th><th>Queues</th><th>Types</th><th>Started</th><th>Last heartbeat</th></tr></thead><tbody>
${workers.map((w) => {
  const alive = nowMs - w.heartbeatAt.getTime() <= LIVE_WITHIN_MS;
  return html`<tr><td class="mono">${w.id}</td><td>${w.host} / ${w.pid}</td><td>${w.version}</td><td>${w.queues ? w.queues.join(', ') : html`<span class="muted">all</span>`}</td><td>${w.types.join(', ')}</td><td>${time(w.startedAt)}</td><td>${alive ? html`${ago(w.heartbeatAt, nowMs)}` : html`<span class="err">silent ${ago(w.heartbeatAt, nowMs)}</span>`}</td></tr>`;
})}</tbody></table>`;
}

export interface ListFilters {
  status?: JobStatus | undefined;
  queue?: string | undefined;
  type?: string | undefined;
  before?: string | undefined;
  limit: number;
}

export function jobListPage(ctx: PageContext, f: ListFilters, jobs: readonly JobRow[]): Html {
  const last = jobs[jobs.length - 1];
  const keep = { status: f.status, queue: f.queue, type: f.type, limit: f.limit === 50 ? undefined : String(f.limit) };
  const body = html`<h1>Jobs</h1>
<form class="filters" method="get" action="${ctx.base}/jobs">
<label>Status<select name="status"><option value="">any</option>${JOB_STATUSES.map((s) => html`<option value="${s}"${f.status === s ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>Queue<input name="queue" value="${f.queue ?? ''}" placeholder="any"></label>
<label>Type<input name="type" value="${f.type ?? ''}" placeholder="any"></label>
<button class="primary">Filter</button> <a href="${ctx.base}/jobs">clear</a></form>
${jobs.length === 0
  ? html`<p class="muted">No jobs match${f.before ? ' on this page' : ''}.</p>`
  : html`<table><thead><tr><th class="num">Id</th><th>Type</th><th>Queue</th><th>Status</th><th class="num">Attempts</th><th>Run at</th><th>Updated</th><th>Last error</th></tr></thead><tbody>
${jobs.map((j) => html`<tr><td class="num"><a href="${ctx.base}/jobs/${j.id}">${j.id}</a></td><td>${j.type}</td><td>${j.queue}</td><td>${statusBadge(j.status)}</td><td class="num">${j.attempts}/${j.maxAttempts}</td><td>${time(j.runAt)}</td><td>${time(j.updatedAt)}</td><td>${j.lastError ? html`<span class="err" title="${truncate(j.lastError, 500)}">${j.lastErrorCode ? html`<code>${j.lastErrorCode}</code> ` : ''}${truncate(j.lastError, 80)}</span>` : ''}</td></tr>`)}
</tbody></table>`}
<div class="pager">${f.before ? html`<a href="${ctx.base}/jobs${q(keep)}">« newest</a>` : ''}${last && jobs.length === f.limit ? html`<a href="${ctx.base}/jobs${q({ ...keep, before: last.id })}">older »</a>` : ''}</div>`;
  return layout(ctx, 'Jobs', f.status === 'dead' ? 'dead' : 'jobs', body);
}

const NOTICES: Record<string, string> = { retried: 'The job is due now; a worker will pick it up.', cancelled: 'The job is cancelled.' };

export function jobDetailPage(ctx: PageContext, job: JobRow, attempts: readonly AttemptRow[], effects: readonly EffectRow[], notice?: string): Html {
  const msg = notice ? NOTICES[notice] : undefined;
  const action = (verb: 'retry' | 'cancel', label: string, cls: string) =>
    html`<form method="post" action="${ctx.base}/jobs/${job.id}/${verb}"><input type="hidden" name="csrf" value="${ctx.csrf}"><button class="${cls}">${label}</button></form>`;
  const body = html`<h1>Job ${job.id} <span class="muted">·</span> ${job.type} ${statusBadge(job.status)}</h1>
${msg ? html`<div class="notice">${msg}</div>` : ''}
<div class="actions">${RETRYABLE.has(job.status) ? action('retry', job.status === 'queued' || job.status === 'failed' ? 'Run now' : 'Retry', 'primary') : ''}${CANCELLABLE.has(job.status) ? action('cancel', 'Cancel', 'danger') : ''}</div>
<div class="card"><dl class="kv">
<dt>Queue</dt><dd><a href="${ctx.base}/jobs?queue=${encodeURIComponent(job.queue)}">${job.queue}</a></dd>
<dt>Status</dt><dd>${statusBadge(job.status)}</dd>
<dt>Attempts</dt><dd>${job.attempts} of ${job.maxAttempts}</dd>
<dt>Priority</dt><dd>${job.priority}</dd>
<dt>Run at</dt><dd>${time(job.runAt)} <span class="muted">${ago(job.runAt)}</span></dd>
<dt>Created</dt><dd>${time(job.createdAt)}</dd>
<dt>Started</dt><dd>${time(job.startedAt)}</dd>
<dt>Finished</dt><dd>${time(job.finishedAt)}</dd>
${job.lockedBy ? html`<dt>Leased by</dt><dd class="mono">${job.lockedBy} until ${iso(job.lockedUntil)}</dd>` : ''}
<dt>Timeouts</dt><dd>inactivity ${duration(job.timeoutMs)}, max runtime ${duration(job.maxRuntimeMs)}</dd>
${job.idempotencyKey ? html`<dt>Idempotency key</dt><dd class="mono">${job.idempotencyKey}</dd>` : ''}
${job.scheduleName ? html`<dt>Schedule</dt><dd>${job.scheduleName} (slot ${iso(job.slotAt)})</dd>` : ''}
${job.lastError ? html`<dt>Last error</dt><dd class="err">${job.lastErrorCode ? html`<code>${job.lastErrorCode}</code> ` : ''}${job.lastError}</dd>` : ''}
</dl></div>
<h2>Payload</h2><pre>${json(job.payload)}</pre>
<h2>Attempts</h2>${attemptsTable(attempts)}
<h2>Effects</h2>${effects.length
  ? html`<table><thead><tr><th>Key</th><th>State</th><th>Result</th><th>Recorded</th><th>Done</th></tr></thead><tbody>${effects.map((e) => html`<tr><td class="mono">${e.key}</td><td>${e.state}</td><td><code>${truncate(json(e.result), 300)}</code></td><td>${time(e.createdAt)}</td><td>${time(e.doneAt)}</td></tr>`)}</tbody></table>`
  : html`<p class="muted">No effects recorded with <code>ctx.once</code>.</p>`}`;
  return layout(ctx, `Job ${job.id}`, 'jobs', body);
}

function attemptsTable(attempts: readonly AttemptRow[]): Html {
  if (attempts.length === 0) return html`<p class="muted">Not attempted yet.</p>`;
  return html`<table><thead><tr><th class="num">#</th><th>Worker</th><th>Started</th><th class="num">Duration</th><th>Outcome</th><th>Error</th><th class="num">Retry in</th></tr></thead><tbody>
${attempts.map((a) => html`<tr><td class="num">${a.attempt}</td><td class="mono">${a.workerId}</td><td>${time(a.startedAt)}</td><td class="num">${duration(a.durationMs)}</td><td>${a.outcome}</td>
<td>${a.errorCode ? html`<code>${a.errorCode}</code> ` : ''}${a.errorMessage ? html`<span class="err">${a.errorMessage}</span>` : ''}${a.errorStack ? html`<details><summary>stack</summary><pre>${a.errorStack}</pre></details>` : ''}</td>
<td class="num">${a.retryDelayMs === null ? '' : duration(a.retryDelayMs)}</td></tr>`)}
</tbody></table>`;
}

export function schedulesPage(ctx: PageContext, schedules: readonly ScheduleRow[]): Html {
  const body = html`<h1>Schedules</h1>${schedules.length === 0
    ? html`<p class="muted">No schedules.</p>`
    : html`<table><thead><tr><th>Name</th><th>When</th><th>Job type</th><th>Queue</th><th>Misfire</th><th>Next run</th><th>Last run</th><th>Enabled</th></tr></thead><tbody>
${schedules.map((s) => html`<tr><td>${s.name}</td><td class="mono">${s.cron ? `${s.cron} (${s.timezone})` : `every ${duration(s.everyMs)}`}</td><td><a href="${ctx.base}/jobs?type=${encodeURIComponent(s.type)}">${s.type}</a></td><td>${s.queue}</td><td>${s.misfire}</td><td>${time(s.nextRunAt)}</td><td>${time(s.lastRunAt)}</td><td>${s.enabled ? 'yes' : html`<span class="muted">no</span>`}</td></tr>`)}
</tbody></table>`}`;
  return layout(ctx, 'Schedules', 'schedules', body);
}

export function loginPage(base: string, csrf: string, next: string, failed: boolean): Html {
  return plainPage('Sign in', html`<div class="login card"><h1>Sign in</h1>
${failed ? html`<div class="notice bad">That token is not right.</div>` : ''}
<form method="post" action="${base}/login"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="next" value="${next}">
<label>Dashboard token<input type="password" name="token" autocomplete="current-password" autofocus required></label>
<p><button class="primary">Sign in</button></p></form>
<p class="muted">The token is the one the dashboard was started with (<code>--token</code> or <code>LEASEHOLD_DASHBOARD_TOKEN</code>).</p></div>`);
}

export function errorPage(status: number, message: string, base: string): Html {
  const title = status === 400 ? 'Bad request' : status === 403 ? 'Forbidden' : status === 404 ? 'Not found' : status === 409 ? 'Conflict' : status === 401 ? 'Unauthorized' : 'Error';
  return plainPage(title, html`<div class="card"><h1>${status} · ${title}</h1><p>${message}</p><p>Nothing was changed. <a href="${base}/">Back to the overview</a></p></div>`);
}
