/**
 * Bulk actions on the jobs page: Retry / Cancel / Delete every job matching the current filter.
 * The button posts the filter; the server answers with a confirmation naming the filter and how
 * many jobs the action would change now; only the confirmed POST runs it (in bounded batches).
 * A bulk action takes status, queue and type (exact names); with no filter at all the operator
 * must tick "all jobs".
 */
import { html } from 'hono/html';
import type { BulkAction } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { FilterParams } from './jobs.js';

export const BULK_ACTIONS: readonly BulkAction[] = ['retry', 'cancel', 'delete'];
const LABEL: Record<BulkAction, string> = { retry: 'Retry', cancel: 'Cancel', delete: 'Delete' };
const WHAT: Record<BulkAction, string> = {
  retry: 'Each failed, dead, cancelled or waiting job becomes due now with its attempt budget reset.',
  cancel: 'Each waiting or running job is cancelled for good.',
  delete: 'Each finished job (succeeded, dead or cancelled) is deleted with its attempts and history. This cannot be undone.',
};

/** The filter a bulk action takes, from the page's: null when the page's has a part it cannot take. */
export function bulkFilterOf(p: FilterParams): { status?: JobStatus; queue?: string; type?: string } | null {
  if (p.q !== undefined || p.key !== undefined || p.id !== undefined) return null;
  if (p.queue?.endsWith('*') || p.type?.endsWith('*')) return null;
  return { ...(p.status ? { status: p.status as JobStatus } : {}), ...(p.queue ? { queue: p.queue } : {}), ...(p.type ? { type: p.type } : {}) };
}

/** "status dead, queue mail" or "no filter: every job". */
export function describeFilter(f: { status?: string; queue?: string; type?: string }): string {
  const parts = (['status', 'queue', 'type'] as const).filter((k) => f[k] !== undefined).map((k) => `${k} ${String(f[k])}`);
  return parts.length ? parts.join(', ') : 'no filter: every job';
}

const hiddenFilter = (p: Record<string, string | undefined>) =>
  html`${(['status', 'queue', 'type'] as const).map((k) => (p[k] ? html`<input type="hidden" name="${k}" value="${p[k]}">` : ''))}`;

/** The bar over the list: a button per action, or why there is none for this filter. */
export function bulkBar(ctx: PageContext, p: FilterParams) {
  const f = bulkFilterOf(p);
  if (!f) return html`<p class="muted bulk">Bulk actions take status, queue and type (exact names); this search has more.</p>`;
  return html`<div class="actions bulk"><span class="muted">All matching:</span>${BULK_ACTIONS.map((a) => html`<form class="inline" method="post" action="${ctx.base}/jobs/bulk"><input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="action" value="${a}">${hiddenFilter(f)}<button class="${a === 'retry' ? '' : 'danger'}">${LABEL[a]}…</button></form>`)}</div>`;
}

export interface BulkAsk {
  action: BulkAction;
  filter: { status?: string; queue?: string; type?: string };
  /** how many jobs the action would change now */
  count: number;
  /** false: more than `count` (the preview stopped at its cap) */
  exact: boolean;
  /** at most this many are changed by one run */
  max: number;
}

export function bulkConfirmPage(ctx: PageContext, a: BulkAsk): PageSpec {
  const none = Object.keys(a.filter).length === 0;
  const n = `${a.count.toLocaleString('en-US')}${a.exact ? '' : '+'}`;
  const title = `${LABEL[a.action]} ${n} job${a.count === 1 && a.exact ? '' : 's'}?`;
  const back = `${ctx.base}/jobs${(() => {
    const u = new URLSearchParams(Object.entries(a.filter).filter(([, v]) => v) as [string, string][]).toString();
    return u ? `?${u}` : '';
  })()}`;
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
