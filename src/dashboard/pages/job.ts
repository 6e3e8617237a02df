/**
 * One job: every field, its payload, every attempt and its effects, with Retry / Run now and
 * Cancel (Cancel asks first). Status, attempts, times, lease, last error, the buttons and both
 * tables are live, so a job running elsewhere is seen finishing without a reload.
 */
import { html } from 'hono/html';
import type { AttemptRow, EffectRow, JobRow } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import { duration, json, truncate } from '../layout.js';
import type { Column, LiveModel, Part } from '../view.js';
import { badge, button, cell, iso, slot, tableHtml, text, when } from '../view.js';

const RETRYABLE = new Set(['queued', 'failed', 'dead', 'cancelled']);
export const CANCELLABLE = new Set(['queued', 'failed', 'running']);
const NOTICES: Record<string, string> = { retried: 'The job is due now; a worker will pick it up.', cancelled: 'The job is cancelled.' };

export interface JobData {
  job: JobRow;
  attempts: readonly AttemptRow[];
  effects: readonly EffectRow[];
  nowMs: number;
}

/** The question Cancel asks before it runs. */
export const cancelQuestion = (job: JobRow) => `Cancel job ${job.id} (${job.type})? It will not run again unless someone retries it.`;

function actions(ctx: PageContext, job: JobRow): Part[] {
  const parts: Part[] = [];
  if (RETRYABLE.has(job.status)) parts.push(button({ a: `${ctx.base}/jobs/${job.id}/retry`, l: job.status === 'queued' || job.status === 'failed' ? 'Run now' : 'Retry', c: 'primary' }));
  if (CANCELLABLE.has(job.status)) parts.push(button({ a: `${ctx.base}/jobs/${job.id}/cancel`, l: 'Cancel', c: 'danger', k: cancelQuestion(job) }));
  return parts;
}

const ATTEMPT_COLS: Column[] = [{ l: '#', c: 'num' }, { l: 'Worker' }, { l: 'Started' }, { l: 'Duration', c: 'num' }, { l: 'Outcome' }, { l: 'Error' }, { l: 'Retry in', c: 'num' }];
const EFFECT_COLS: Column[] = [{ l: 'Key' }, { l: 'State' }, { l: 'Result' }, { l: 'Recorded' }, { l: 'Done' }];

export function jobLive(ctx: PageContext, d: JobData): Required<Pick<LiveModel, 'tables' | 'slots'>> {
  const { job } = d;
  return {
    slots: {
      status: [badge(job.status)],
      attempts: [text(`${job.attempts} of ${job.maxAttempts}`)],
      runAt: [when(job.runAt), text(' '), { ...when(job.runAt, true, d.nowMs), c: 'muted' }],
      started: [when(job.startedAt)],
      finished: [when(job.finishedAt)],
      lease: job.lockedBy ? [text(`${job.lockedBy} until ${iso(job.lockedUntil)}`, 'mono')] : [text('—', 'muted')],
      lastError: job.lastError ? [...(job.lastErrorCode ? [text(job.lastErrorCode, 'mono'), text(' ')] : []), text(job.lastError, 'err')] : [text('—', 'muted')],
      actions: actions(ctx, job),
    },
    tables: {
      attempts: d.attempts.map((a) => [
        cell(text(a.attempt), 'num', '#'), cell(text(a.workerId, 'mono'), undefined, 'Worker'), cell(when(a.startedAt), undefined, 'Started'),
        cell(text(duration(a.durationMs)), 'num', 'Duration'), cell(text(a.outcome), undefined, 'Outcome'),
        cell([...(a.errorCode ? [text(a.errorCode, 'mono'), text(' ')] : []), ...(a.errorMessage ? [text(a.errorMessage, 'err')] : [])], undefined, 'Error'),
        cell(text(a.retryDelayMs === null ? '' : duration(a.retryDelayMs)), 'num', 'Retry in'),
      ]),
      effects: d.effects.map((e) => [
        cell(text(e.key, 'mono'), undefined, 'Key'), cell(text(e.state), undefined, 'State'), cell(text(truncate(json(e.result), 300), 'mono'), undefined, 'Result'),
        cell(when(e.createdAt), undefined, 'Recorded'), cell(when(e.doneAt), undefined, 'Done'),
      ]),
    },
  };
}

/** Stacks are long and multi-line: shown under the attempts, each behind a disclosure, not redrawn. */
function stacks(attempts: readonly AttemptRow[]) {
  const withStack = attempts.filter((a) => a.errorStack);
  if (withStack.length === 0) return '';
  return html`${withStack.map((a) => html`<details><summary>stack of attempt ${a.attempt}</summary><pre>${a.errorStack}</pre></details>`)}`;
}

export function jobDetailPage(ctx: PageContext, d: JobData, notice?: string): PageSpec {
  const { job } = d;
  const m = jobLive(ctx, d);
  const s = (name: string, cls = '') => slot(name, m.slots[name] ?? [], ctx.csrf, 'span', cls);
  const msg = notice ? NOTICES[notice] : undefined;
  const body = html`<h1>Job ${job.id} <span class="muted">·</span> ${job.type} ${s('status')}</h1>
${msg ? html`<div class="notice">${msg}</div>` : ''}
${slot('actions', m.slots.actions ?? [], ctx.csrf, 'div', 'actions')}
<div class="card"><dl class="kv">
<dt>Queue</dt><dd><a href="${ctx.base}/jobs?queue=${encodeURIComponent(job.queue)}">${job.queue}</a></dd>
<dt>Status</dt><dd>${s('status')}</dd>
<dt>Attempts</dt><dd>${s('attempts')}</dd>
<dt>Priority</dt><dd>${job.priority}</dd>
<dt>Run at</dt><dd>${s('runAt')}</dd>
<dt>Created</dt><dd>${slot('created', [when(job.createdAt)], ctx.csrf)}</dd>
<dt>Started</dt><dd>${s('started')}</dd>
<dt>Finished</dt><dd>${s('finished')}</dd>
<dt>Leased by</dt><dd>${s('lease')}</dd>
<dt>Timeouts</dt><dd>inactivity ${duration(job.timeoutMs)}, max runtime ${duration(job.maxRuntimeMs)}</dd>
${job.idempotencyKey ? html`<dt>Idempotency key</dt><dd class="mono">${job.idempotencyKey}</dd>` : ''}
${job.scheduleName ? html`<dt>Schedule</dt><dd>${job.scheduleName} (slot ${iso(job.slotAt)})</dd>` : ''}
<dt>Last error</dt><dd>${s('lastError')}</dd>
</dl></div>
<h2>Payload</h2><pre>${json(job.payload)}</pre>
<h2>Attempts</h2>${tableHtml('attempts', { cols: ATTEMPT_COLS, rows: m.tables.attempts ?? [], empty: 'Not attempted yet.' }, ctx.csrf, true)}${stacks(d.attempts)}
<h2>Effects</h2>${tableHtml('effects', { cols: EFFECT_COLS, rows: m.tables.effects ?? [], empty: 'No effects recorded with ctx.once.' }, ctx.csrf, true)}`;
  return { title: `Job ${job.id}`, active: 'jobs', live: `/api/jobs/${job.id}`, body };
}

