/**
 * The job list: newest first, filtered by status, queue and type, keyset paging. The rows and
 * the pager are live (the first page shows new jobs as they come). On a phone the rows stack
 * into cards.
 */
import { html } from 'hono/html';
import type { JobRow } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { JOB_STATUSES } from '../../core/status.js';
import type { PageContext, PageSpec } from '../layout.js';
import { truncate } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { badge, cell, link, slot, tableHtml, text, when } from '../view.js';

export interface ListFilters {
  status?: JobStatus | undefined;
  queue?: string | undefined;
  type?: string | undefined;
  before?: string | undefined;
  limit: number;
}

/** A query string from the set values ('' when none). */
export function q(params: Record<string, string | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
}

const COLS: Column[] = [{ l: 'Id', c: 'num' }, { l: 'Type' }, { l: 'Queue' }, { l: 'Status' }, { l: 'Attempts', c: 'num' }, { l: 'Run at' }, { l: 'Updated' }, { l: 'Last error' }];

function lastError(j: JobRow): Part[] {
  if (!j.lastError) return [];
  return [...(j.lastErrorCode ? [text(j.lastErrorCode, 'mono')] : []), text(` ${truncate(j.lastError, 80)}`, 'err', truncate(j.lastError, 500))];
}

export function jobRows(ctx: PageContext, jobs: readonly JobRow[]): Cell[][] {
  return jobs.map((j) => [
    cell(link(j.id, `${ctx.base}/jobs/${j.id}`), 'num', 'Id'), cell(text(j.type), undefined, 'Type'), cell(text(j.queue), undefined, 'Queue'),
    cell(badge(j.status), undefined, 'Status'), cell(text(`${j.attempts}/${j.maxAttempts}`), 'num', 'Attempts'), cell(when(j.runAt), undefined, 'Run at'),
    cell(when(j.updatedAt), undefined, 'Updated'), cell(lastError(j), undefined, 'Last error'),
  ]);
}

/** The filters a link keeps (the default limit left out). */
export function keptFilters(f: ListFilters): Record<string, string | undefined> {
  return { status: f.status, queue: f.queue, type: f.type, limit: f.limit === 50 ? undefined : String(f.limit) };
}

function pager(ctx: PageContext, f: ListFilters, jobs: readonly JobRow[]): Part[] {
  const last = jobs[jobs.length - 1];
  const keep = keptFilters(f);
  const parts: Part[] = [];
  if (f.before) parts.push({ ...link('« newest', `${ctx.base}/jobs${q(keep)}`), rel: 'first', ti: 'first page (k)' }, text(' '));
  if (last && jobs.length === f.limit) parts.push({ ...link('older »', `${ctx.base}/jobs${q({ ...keep, before: last.id })}`), rel: 'next', ti: 'next page (j)' });
  return parts;
}

export function jobsLive(ctx: PageContext, f: ListFilters, jobs: readonly JobRow[]): Required<Pick<LiveModel, 'tables' | 'slots'>> {
  return { tables: { jobs: jobRows(ctx, jobs) }, slots: { pager: pager(ctx, f, jobs) } };
}

export function jobListPage(ctx: PageContext, f: ListFilters, jobs: readonly JobRow[]): PageSpec {
  const m = jobsLive(ctx, f, jobs);
  const body = html`<h1>Jobs</h1>
<form class="filters" method="get" action="${ctx.base}/jobs">
<label>Status<select name="status"><option value="">any</option>${JOB_STATUSES.map((s) => html`<option value="${s}"${f.status === s ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>Queue<input name="queue" value="${f.queue ?? ''}" placeholder="any"></label>
<label>Type<input name="type" value="${f.type ?? ''}" placeholder="any" data-search></label>
<button class="primary">Filter</button> <a href="${ctx.base}/jobs">clear</a></form>
${tableHtml('jobs', { cols: COLS, rows: m.tables.jobs ?? [], empty: f.before ? 'No jobs match on this page.' : 'No jobs match.' }, ctx.csrf, true)}
${slot('pager', m.slots.pager ?? [], ctx.csrf, 'div', 'pager')}`;
  return { title: 'Jobs', active: f.status === 'dead' ? 'dead' : 'jobs', live: `/api/jobs${q({ ...keptFilters(f), before: f.before })}`, body };
}
