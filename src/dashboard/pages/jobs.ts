/**
 * The job list: one search box (a job id jumps to the job; other text is looked for in the last
 * error and the payload) and filters (status; queue, type and idempotency key exact, or a prefix
 * ending in *), newest first, paged both ways with the count of the whole filter (exact, or
 * "about N" / "N+" where the storage estimates). The URL holds the filter, so it can be shared;
 * the rows, the count and the pager are live. On a phone the rows stack into cards.
 */
import { html } from 'hono/html';
import type { MatchCount } from '../../core/search.js';
import type { JobRow } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { JOB_STATUSES } from '../../core/status.js';
import type { PageContext, PageSpec } from '../layout.js';
import { truncate } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { badge, cell, link, slot, tableHtml, text, when } from '../view.js';
import { bulkBar } from './bulk.js';

/** The legacy exact filters (input.ts parseFilters), for a client without search. */
export interface ListFilters {
  status?: JobStatus | undefined;
  queue?: string | undefined;
  type?: string | undefined;
  before?: string | undefined;
  limit: number;
}

/** The URL parameters that make up a filter, in the order links spell them. */
export const FILTER_PARAMS = ['q', 'status', 'queue', 'type', 'key', 'id'] as const;
export type FilterParams = Partial<Record<(typeof FILTER_PARAMS)[number], string>>;

/** What the jobs page was asked for: the filter as the URL spells it, the cursor and the page size. */
export interface JobQuery {
  params: FilterParams;
  before?: string | undefined;
  after?: string | undefined;
  limit: number;
}

/** A page of jobs as the route found it. */
export interface JobsFound {
  jobs: readonly JobRow[];
  older: string | null;
  newer: string | null;
  /** absent: the client cannot count */
  count?: MatchCount | undefined;
  scanCapped: boolean;
  /** the text test's bound, for the capped message */
  scanLimit: number;
  /** how many job ids a filter no index answers reads from its cursor */
  readLimit: number;
  /** whether this filter is one no index answers (it reads within readLimit ids) */
  byRange: boolean;
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

/** The filter and page size a link keeps (the default limit left out). */
export function keptFilters(f: JobQuery): Record<string, string | undefined> {
  return { ...f.params, limit: f.limit === 50 ? undefined : String(f.limit) };
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** "12 jobs", "about 1,200,000 jobs", "10,000+ jobs": as exact as the storage could say cheaply. */
export function countText(c: MatchCount): string {
  const n = c.exact ? fmt(c.count) : c.estimated ? `about ${fmt(c.count)}` : `${fmt(c.count)}+`;
  return `${n} job${c.exact && c.count === 1 ? '' : 's'}`;
}

function pager(ctx: PageContext, f: JobQuery, found: JobsFound): Part[] {
  const keep = keptFilters(f);
  const parts: Part[] = [];
  if (f.before || f.after) parts.push({ ...link('« newest', `${ctx.base}/jobs${q(keep)}`), rel: 'first', ti: 'first page' }, text(' '));
  if (found.newer) parts.push({ ...link('‹ newer', `${ctx.base}/jobs${q({ ...keep, after: found.newer })}`), rel: 'prev', ti: 'newer jobs (k)' }, text(' '));
  if (found.older) parts.push({ ...link('older ›', `${ctx.base}/jobs${q({ ...keep, before: found.older })}`), rel: 'next', ti: 'older jobs (j)' });
  return parts;
}

function countParts(found: JobsFound): Part[] {
  if (!found.count) return [];
  return [text(`${countText(found.count)} match${found.count.exact && found.count.count === 1 ? 'es' : ''}`, undefined, found.count.exact ? undefined : 'counted up to a bound, or estimated, so a large filter answers fast')];
}

function cappedParts(f: JobQuery, found: JobsFound): Part[] {
  if (!found.scanCapped) return [];
  // both bounds in one sentence: the text test's candidates, and the ids an unindexed filter reads
  const ids = `the ${fmt(found.readLimit)} job ids nearest here (no index answers this filter)`;
  const others = Object.keys(f.params).some((k) => k !== 'q') ? ' matching the other filters' : '';
  const what = f.params.q !== undefined
    ? `looked for the text in the newest ${fmt(found.scanLimit)} jobs${others}${found.byRange ? `, within ${ids}` : ''}`
    : found.byRange ? `read ${ids}` : 'read as far as one page may';
  return [text(`This page ${what}; more may match further on (${found.older ? 'older ›' : 'newer ‹'}).`)];
}

export function jobsLive(ctx: PageContext, f: JobQuery, found: JobsFound): Required<Pick<LiveModel, 'tables' | 'slots' | 'show'>> {
  const capped = cappedParts(f, found);
  return {
    tables: { jobs: jobRows(ctx, found.jobs) },
    slots: { pager: pager(ctx, f, found), count: countParts(found), capped },
    show: { capped: capped.length > 0 },
  };
}

export interface JobsPageOptions {
  /** the client can search (prefixes, key, id, text) */
  search: boolean;
  /** the client can act in bulk */
  bulk: boolean;
  /** a bulk action's result, from the redirect after it */
  done?: { action: string; changed: number; complete: boolean } | undefined;
}

const PAST: Record<string, string> = { retry: 'retried', cancel: 'cancelled', delete: 'deleted' };

export function jobListPage(ctx: PageContext, f: JobQuery, found: JobsFound, o: JobsPageOptions): PageSpec {
  const m = jobsLive(ctx, f, found);
  const p = f.params;
  const hint = 'exact, or a prefix ending in *';
  const body = html`<h1>Jobs</h1>
${o.done ? html`<div class="notice" role="status">${fmt(o.done.changed)} job${o.done.changed === 1 ? '' : 's'} ${PAST[o.done.action] ?? o.done.action}${o.done.complete ? '.' : ' — it stopped at its limit; run it again for the rest.'}</div>` : ''}
<form class="filters" method="get" action="${ctx.base}/jobs" role="search">
${o.search ? html`<label class="wide">Search<input type="search" name="q" value="${p.q ?? ''}" placeholder="job id, or text in error or payload" data-search></label>` : ''}
<label>Status<select name="status"><option value="">any</option>${JOB_STATUSES.map((s) => html`<option value="${s}"${p.status === s ? html` selected` : ''}>${s}</option>`)}</select></label>
<label>Queue<input name="queue" value="${p.queue ?? ''}" placeholder="any" title="${o.search ? hint : 'exact'}"${o.search ? '' : html` data-search`}></label>
<label>Type<input name="type" value="${p.type ?? ''}" placeholder="any" title="${o.search ? hint : 'exact'}"></label>
${o.search ? html`<label>Idempotency key<input name="key" value="${p.key ?? ''}" placeholder="any" title="${hint}"></label>` : ''}
${p.id ? html`<input type="hidden" name="id" value="${p.id}">` : ''}
<button class="primary">Search</button> <a href="${ctx.base}/jobs">clear</a></form>
<p class="muted">${slot('count', m.slots.count ?? [], ctx.csrf)}</p>
<div class="notice warn" data-show="capped"${m.show.capped ? '' : html` hidden`}>${slot('capped', m.slots.capped ?? [], ctx.csrf)}</div>
${o.bulk ? bulkBar(ctx, p) : ''}
${tableHtml('jobs', { cols: COLS, rows: m.tables.jobs ?? [], empty: f.before || f.after ? 'No jobs match on this page.' : 'No jobs match.' }, ctx.csrf, true)}
${slot('pager', m.slots.pager ?? [], ctx.csrf, 'div', 'pager')}`;
  return { title: 'Jobs', active: p.status === 'dead' && Object.keys(p).length === 1 ? 'dead' : 'jobs', live: `/api/jobs${q({ ...keptFilters(f), before: f.before, after: f.after })}`, body };
}
