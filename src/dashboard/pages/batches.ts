/**
 * Batches: the list (newest first, paged) and one batch's page: its state, a bar of how its
 * members ended (succeeded, dead, cancelled, still pending) out of its total, its callback's type
 * and, once enqueued, a link to the callback job, and its members (paged, linked). All live.
 */
import { html } from 'hono/html';
import type { BatchRow, JobRow, WorkflowNode } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { badge, cell, link, slot, tableHtml, text, when } from '../view.js';

/** members per page, and batches per page of the list */
export const PAGE = 50;

export interface BatchData {
  batch: BatchRow;
  /** a page of members, in id order, above `after` */
  members: readonly WorkflowNode[];
  after: string | undefined;
  /** more members past this page */
  more: boolean;
  /** the callback job once enqueued (null: not yet, or none: onSuccessOnly and a member did not succeed; undefined: the client cannot look) */
  callback: JobRow | null | undefined;
}

export interface BatchListData {
  batches: readonly BatchRow[];
  before: string | undefined;
  more: boolean;
}

const ENDINGS = ['succeeded', 'dead', 'cancelled'] as const;

/** How the members ended, as a bar out of the total (widths in whole percent; pending last) and in words. */
export function progressBar(b: BatchRow): Part[] {
  const pending = Math.max(0, b.total - b.succeeded - b.dead - b.cancelled);
  const pct = (n: number) => (b.total === 0 ? 0 : Math.round((n * 100) / b.total));
  const segs: Part[] = [...ENDINGS.map((s) => ({ n: b[s], s })), { n: pending, s: 'waiting' }].filter((x) => x.n > 0).map((x) => ({ t: '', c: `s-${x.s} w${pct(x.n)}`, ti: `${x.n} ${x.s === 'waiting' ? 'pending' : x.s}` }));
  return segs;
}

export const endedText = (b: BatchRow): string =>
  `${b.succeeded + b.dead + b.cancelled} of ${b.total} ended: ${b.succeeded} succeeded, ${b.dead} dead, ${b.cancelled} cancelled, ${Math.max(0, b.total - b.succeeded - b.dead - b.cancelled)} pending`;

function callbackParts(ctx: PageContext, d: BatchData): Part[] {
  const type = text(d.batch.callbackType, 'mono');
  if (d.callback) return [type, text(': '), link(`job ${d.callback.id}`, `${ctx.base}/jobs/${d.callback.id}`), text(' '), badge(d.callback.status)];
  if (d.batch.state !== 'done') return [type, text(' (enqueued once the batch is closed and its last member ends)', 'muted')];
  if (d.batch.onSuccessOnly && d.batch.succeeded < d.batch.total) return [type, text(' (not enqueued: on success only, and a member did not succeed)', 'muted')];
  return [type, ...(d.callback === null ? [text(' (not found: pruned?)', 'muted')] : [])];
}

const MEMBER_COLS: Column[] = [{ l: 'Job', c: 'num' }, { l: 'Type' }, { l: 'Status' }];
const memberRows = (ctx: PageContext, members: readonly WorkflowNode[]): Cell[][] =>
  members.map((m) => [cell(link(`#${m.id}`, `${ctx.base}/jobs/${m.id}`), 'num', 'Job'), cell(text(m.type, 'mono'), undefined, 'Type'), cell(badge(m.status), undefined, 'Status')]);

export function batchLive(ctx: PageContext, d: BatchData): Required<Pick<LiveModel, 'slots' | 'tables'>> {
  const b = d.batch;
  return {
    slots: {
      state: [badge(b.state)], bar: progressBar(b), ended: [text(endedText(b))], callback: callbackParts(ctx, d), finished: [when(b.finishedAt)],
      condition: [text(b.onSuccessOnly ? 'only if every member succeeded' : 'whatever the members ended as')],
    },
    tables: { members: memberRows(ctx, d.members) },
  };
}

export function batchPage(ctx: PageContext, d: BatchData): PageSpec {
  const b = d.batch;
  const m = batchLive(ctx, d);
  const s = (name: string, tag: 'span' | 'div' = 'span', cls = '') => slot(name, m.slots[name] ?? [], ctx.csrf, tag, cls);
  const here = `${ctx.base}/batches/${b.id}`;
  const last = d.members[d.members.length - 1];
  const pager = html`${d.after ? html`<a href="${here}" rel="first">« first members</a> ` : ''}${d.more && last ? html`<a href="${here}?after=${last.id}" rel="next">next members ›</a>` : ''}`;
  const body = html`<h1>Batch ${b.id} ${s('state')}</h1>
<div class="card"><dl class="kv">
<dt>Progress</dt><dd>${s('bar', 'div', 'bar')}${s('ended')}</dd>
<dt>Callback</dt><dd>${s('callback')}</dd>
<dt>Fires</dt><dd>${s('condition')}</dd>
<dt>Created</dt><dd>${slot('created', [when(b.createdAt)], ctx.csrf)}</dd>
<dt>Finished</dt><dd>${s('finished')}</dd>
</dl></div>
<h2>Members</h2>${tableHtml('members', { cols: MEMBER_COLS, rows: m.tables.members ?? [], empty: 'No members.' }, ctx.csrf, true)}<p>${pager}</p>`;
  return { title: `Batch ${b.id}`, active: 'batches', live: `/api/batches/${b.id}${d.after ? `?after=${d.after}` : ''}`, body };
}

const LIST_COLS: Column[] = [{ l: 'Batch', c: 'num' }, { l: 'State' }, { l: 'Progress' }, { l: 'Ended' }, { l: 'Callback' }, { l: 'Created' }];

export function batchesLive(ctx: PageContext, d: BatchListData): Required<Pick<LiveModel, 'tables'>> {
  return {
    tables: {
      batches: d.batches.map((b) => [
        cell(link(`#${b.id}`, `${ctx.base}/batches/${b.id}`), 'num', 'Batch'), cell(badge(b.state), undefined, 'State'),
        cell(progressBar(b).map((p) => ({ ...p, c: `${p.c ?? ''} seg` })), 'barcell', 'Progress'),
        cell(text(`${b.succeeded + b.dead + b.cancelled} of ${b.total}`), undefined, 'Ended'), cell(text(b.callbackType, 'mono'), undefined, 'Callback'), cell(when(b.createdAt), undefined, 'Created'),
      ]),
    },
  };
}

export function batchesPage(ctx: PageContext, d: BatchListData): PageSpec {
  const m = batchesLive(ctx, d);
  const last = d.batches[d.batches.length - 1];
  const pager = html`${d.before ? html`<a href="${ctx.base}/batches" rel="first">« newest</a> ` : ''}${d.more && last ? html`<a href="${ctx.base}/batches?before=${last.id}" rel="next">older ›</a>` : ''}`;
  const body = html`<h1>Batches</h1>
${tableHtml('batches', { cols: LIST_COLS, rows: m.tables.batches ?? [], empty: 'No batches yet: client.batches.create makes one.' }, ctx.csrf, true)}<p>${pager}</p>`;
  return { title: 'Batches', active: 'batches', live: `/api/batches${d.before ? `?before=${d.before}` : ''}`, body };
}
