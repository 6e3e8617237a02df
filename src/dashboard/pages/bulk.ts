/**
 * Bulk actions on the jobs page: Retry / Cancel / Delete every job matching the current filter.
 * The button posts the filter; the server answers with a confirmation naming the filter and how
 * many jobs the action would change now; only the confirmed POST runs it (in bounded batches).
 * Every filter the page searches by is one a bulk action takes; with no filter at all the
 * operator must tick "all jobs".
 */
import { html } from 'hono/html';
import type { BulkAction } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { FilterParams } from './jobs.js';
import { FILTER_PARAMS, q } from './jobs.js';

export const BULK_ACTIONS: readonly BulkAction[] = ['retry', 'cancel', 'delete'];
const LABEL: Record<BulkAction, string> = { retry: 'Retry', cancel: 'Cancel', delete: 'Delete' };
const WHAT: Record<BulkAction, string> = {
  retry: 'Each failed, dead, cancelled or waiting job becomes due now with its attempt budget reset.',
  cancel: 'Each waiting or running job is cancelled for good.',
  delete: 'Each finished job (succeeded, dead or cancelled) is deleted with its attempts and history. This cannot be undone.',
};

const NAMES: Record<string, string> = { q: 'text', status: 'status', queue: 'queue', type: 'type', key: 'idempotency key', id: 'id' };

/** "status dead, queue mail*" or "no filter: every job". */
export function describeFilter(p: FilterParams): string {
  const parts = FILTER_PARAMS.filter((k) => p[k] !== undefined).map((k) => `${NAMES[k]} ${k === 'q' ? JSON.stringify(p[k]) : String(p[k])}`);
  return parts.length ? parts.join(', ') : 'no filter: every job';
}

const hiddenFilter = (p: FilterParams) => html`${FILTER_PARAMS.map((k) => (p[k] ? html`<input type="hidden" name="${k}" value="${p[k]}">` : ''))}`;

/** The bar over the list: a button per action, or why there is none for this filter. */
export function bulkBar(ctx: PageContext, f: FilterParams) {
  // with the script, the button asks in a dialog, with the count from /api/bulk
  return html`<div class="actions bulk"><span class="muted">All matching:</span>${BULK_ACTIONS.map((a) => html`<form class="inline" method="post" action="${ctx.base}/jobs/bulk" data-confirm-from="${ctx.base}/api/bulk${q({ action: a, ...f })}"><input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="action" value="${a}">${hiddenFilter(f)}<button class="${a === 'retry' ? '' : 'danger'}">${LABEL[a]}…</button></form>`)}</div>`;
}

export interface BulkAsk {
  action: BulkAction;
  filter: FilterParams;
  /** how many jobs the action would change now */
  count: number;
  /** false: more than `count` (the preview stopped at its cap) */
  exact: boolean;
  /** at most this many are changed by one run */
  max: number;
}

/** The dialog's question and button for the script; null without a filter (the page asks for the "all jobs" box). */
export function bulkQuestion(a: BulkAsk): { question: string | null; label: string; count: number; exact: boolean } {
  const n = `${a.count.toLocaleString('en-US')}${a.exact ? '' : '+'}`;
  const jobs = `${n} job${a.count === 1 && a.exact ? '' : 's'}`;
  const none = Object.keys(a.filter).length === 0;
  const question = none ? null : a.count === 0 ? `No job matching ${describeFilter(a.filter)} can be changed now.` : `${LABEL[a.action]} ${jobs} matching ${describeFilter(a.filter)}? ${WHAT[a.action]}`;
  return { question, label: `${LABEL[a.action]} ${jobs}`, count: a.count, exact: a.exact };
}

export function bulkConfirmPage(ctx: PageContext, a: BulkAsk): PageSpec {
  const none = Object.keys(a.filter).length === 0;
  const n = `${a.count.toLocaleString('en-US')}${a.exact ? '' : '+'}`;
  const title = `${LABEL[a.action]} ${n} job${a.count === 1 && a.exact ? '' : 's'}?`;
  const back = `${ctx.base}/jobs${q(a.filter)}`;
  const body = html`<div class="card"><h1>${title}</h1>
<dl class="kv"><dt>Filter</dt><dd data-bulk-filter>${describeFilter(a.filter)}</dd><dt>Jobs it changes now</dt><dd data-bulk-count>${n}</dd></dl>
<p>${WHAT[a.action]} Jobs enqueued after it starts are left alone; one run changes at most ${a.max.toLocaleString('en-US')}. Every change is recorded in the job's history.</p>
${a.count === 0 ? html`<p><strong>No job matches now: there is nothing to do.</strong></p>` : ''}
<div class="actions"><form method="post" action="${ctx.base}/jobs/bulk"><input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="action" value="${a.action}">${hiddenFilter(a.filter)}<input type="hidden" name="confirmed" value="1">
${none ? html`<label class="check"><span><input type="checkbox" name="all" value="1" required> all jobs — there is no filter</span></label>` : ''}
<button class="danger"${a.count === 0 ? html` disabled` : ''}>${LABEL[a.action]} ${n} job${a.count === 1 && a.exact ? '' : 's'}</button></form>
<a href="${back}">Back</a></div></div>`;
  return { title, active: 'jobs', body };
}
