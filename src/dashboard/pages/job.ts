/**
 * One job: every field, its payload, its history (every attempt, and each operator's retry or
 * cancel as a marker row between them: who, from where, when, after how many attempts, so
 * attempt numbers starting again after a retry are marked) and its effects, with Retry / Run now
 * and Cancel (Cancel asks first). Status, attempts, times, lease, last error, the buttons and
 * both tables are live, so a job running elsewhere is seen finishing without a reload; so are
 * its last reported progress and, once it succeeded, its result.
 */
import { html } from 'hono/html';
import { jobHistory } from '../../core/job-history.js';
import { ACTION_STATUSES, retryRefusal } from '../../core/operator.js';
import type { AttemptRow, BatchRow, EffectRow, JobDependencies, JobEvent, JobRow } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import { duration, json, truncate } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { badge, button, cell, iso, slot, tableHtml, text, when } from '../view.js';

const RETRYABLE = new Set<string>(ACTION_STATUSES.retry);
export const CANCELLABLE = new Set<string>(ACTION_STATUSES.cancel);
const NOTICES: Record<string, string> = { retried: 'The job is due now; a worker will pick it up.', cancelled: 'The job is cancelled.' };

export interface JobData {
  job: JobRow;
  attempts: readonly AttemptRow[];
  effects: readonly EffectRow[];
  /** operator events, oldest first (empty when the client cannot read them) */
  events: readonly JobEvent[];
  /** its workflow's edges (null when the client cannot read them) */
  edges?: JobDependencies | null;
  /** the batch it is a member of (null: none, or the client cannot read it) */
  batch?: BatchRow | null;
  nowMs: number;
}

/** The question Cancel asks before it runs. */
export const cancelQuestion = (job: JobRow) => `Cancel job ${job.id} (${job.type})? It will not run again unless someone retries it.`;

function actions(ctx: PageContext, job: JobRow): Part[] {
  const parts: Part[] = [];
  if (RETRYABLE.has(job.status) && retryRefusal(job) === null) parts.push(button({ a: `${ctx.base}/jobs/${job.id}/retry`, l: job.status === 'queued' || job.status === 'failed' ? 'Run now' : 'Retry', c: 'primary' }));
  if (CANCELLABLE.has(job.status)) parts.push(button({ a: `${ctx.base}/jobs/${job.id}/cancel`, l: 'Cancel', c: 'danger', k: cancelQuestion(job) }));
  return parts;
}

const ATTEMPT_COLS: Column[] = [{ l: '#', c: 'num' }, { l: 'Worker' }, { l: 'Started' }, { l: 'Duration', c: 'num' }, { l: 'Outcome' }, { l: 'Error' }, { l: 'Retry in', c: 'num' }];
const EFFECT_COLS: Column[] = [{ l: 'Key' }, { l: 'State' }, { l: 'Result' }, { l: 'Recorded' }, { l: 'Done' }];

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** "retried by dashboard:session-1a2b3c4d from 127.0.0.1 at <time>, after 3 attempts (was dead)" */
function eventParts(e: JobEvent): Part[] {
  return [
    text(`${e.kind} by `, 'strong'), text(e.actor, 'mono'), ...(e.source ? [text(' from '), text(e.source, 'mono')] : []), text(' at '), when(e.at),
    text(`, after ${plural(e.detail.attempts, 'attempt')} (was ${e.detail.status})`), ...(e.detail.bulkId ? [text(' · bulk '), text(e.detail.bulkId, 'mono muted')] : []),
    ...(e.kind === 'retried' ? [text('; attempt numbers start again at 1 below', 'muted')] : []),
  ];
}

/** Attempts and events in the order they happened (core/job-history.ts); an event is one row across the columns. */
export function historyRows(d: Pick<JobData, 'attempts' | 'events'>): Cell[][] {
  const entries = jobHistory(d.attempts, d.events);
  const runs = entries.some((e) => e.run > 1);
  return entries.map((h) => {
    if (h.kind === 'event') return [cell(text(h.event.kind === 'retried' ? '↻' : '✕', undefined, h.event.kind), 'num event', '#'), cell(eventParts(h.event), 'event', 'Event', ATTEMPT_COLS.length - 1)];
    const a = h.attempt;
    return [
      cell(text(runs ? `${a.attempt} · run ${h.run}` : a.attempt), 'num', '#'), cell(text(a.workerId, 'mono'), undefined, 'Worker'), cell(when(a.startedAt), undefined, 'Started'),
      cell(text(duration(a.durationMs)), 'num', 'Duration'), cell(text(a.outcome), undefined, 'Outcome'),
      cell([...(a.errorCode ? [text(a.errorCode, 'mono'), text(' ')] : []), ...(a.errorMessage ? [text(a.errorMessage, 'err')] : [])], undefined, 'Error'),
      cell(text(a.retryDelayMs === null ? '' : duration(a.retryDelayMs)), 'num', 'Retry in'),
    ];
  });
}

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
      progress: job.progress ? [text(truncate(JSON.stringify(job.progress.value), 300), 'mono'), ...(job.progress.note ? [text(' '), text(job.progress.note)] : []), text(' at '), when(job.progress.at)] : [text('—', 'muted')],
      result: job.result === undefined ? [text('—', 'muted')] : [text(truncate(JSON.stringify(job.result), 2_000), 'mono')],
      workflow: workflowParts(ctx, d),
      batch: d.batch ? [text(`batch ${d.batch.id}, ${d.batch.state}: ${d.batch.succeeded + d.batch.dead + d.batch.cancelled} of ${d.batch.total} ended (${d.batch.succeeded} succeeded, ${d.batch.dead} dead, ${d.batch.cancelled} cancelled), callback ${d.batch.callbackType}`)] : [text('—', 'muted')],
    },
    tables: {
      attempts: historyRows(d),
      effects: d.effects.map((e) => [
        cell(text(e.key, 'mono'), undefined, 'Key'), cell(text(e.state), undefined, 'State'), cell(text(truncate(json(e.result), 300), 'mono'), undefined, 'Result'),
        cell(when(e.createdAt), undefined, 'Recorded'), cell(when(e.doneAt), undefined, 'Done'),
      ]),
    },
  };
}

/** Links to the jobs it runs after and those that run after it, and how many parents it still waits for. */
function workflowParts(ctx: PageContext, d: JobData): Part[] {
  const links = (ids: readonly string[]): Part[] => ids.flatMap((id, i) => [...(i > 0 ? [text(', ')] : []), { t: `#${id}`, h: `${ctx.base}/jobs/${id}` }]);
  const { edges, job } = d;
  if (!edges || (edges.parents.length === 0 && edges.children.length === 0)) return [text('—', 'muted')];
  return [
    ...(edges.parents.length > 0 ? [text('after '), ...links(edges.parents)] : []),
    ...(job.pendingParents ? [text(` (waits for ${job.pendingParents})`, 'muted')] : []),
    ...(edges.parents.length > 0 && edges.children.length > 0 ? [text('; ')] : []),
    ...(edges.children.length > 0 ? [text('before '), ...links(edges.children)] : []),
  ];
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
<dt>Progress</dt><dd>${s('progress')}</dd>
<dt>Result</dt><dd>${s('result')}</dd>
<dt>Workflow</dt><dd>${s('workflow')}${d.edges && (d.edges.parents.length > 0 || d.edges.children.length > 0) && ctx.has.workflows ? html` · <a href="${ctx.base}/jobs/${job.id}/workflow">graph</a>` : ''}</dd>
<dt>Batch</dt><dd>${s('batch')}${d.batch && ctx.has.batches ? html` · <a href="${ctx.base}/batches/${d.batch.id}">batch page</a>` : ''}</dd>
</dl></div>
<h2>Payload</h2><pre>${json(job.payload)}</pre>
<h2>History</h2>${tableHtml('attempts', { cols: ATTEMPT_COLS, rows: m.tables.attempts ?? [], empty: 'Not attempted yet.' }, ctx.csrf, true)}${stacks(d.attempts)}
<h2>Effects</h2>${tableHtml('effects', { cols: EFFECT_COLS, rows: m.tables.effects ?? [], empty: 'No effects recorded with ctx.once.' }, ctx.csrf, true)}`;
  return { title: `Job ${job.id}`, active: 'jobs', live: `/api/jobs/${job.id}`, body };
}

