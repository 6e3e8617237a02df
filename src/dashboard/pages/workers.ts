/**
 * Workers: each registered worker (host, pid, version, queues, types, heartbeat) and the jobs
 * it is running now (running jobs grouped by the worker that leases them, from one bounded
 * list). A running job whose worker is not registered is listed under its lease holder too.
 */
import { html } from 'hono/html';
import type { JobRow, WorkerRow } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { cell, link, tableHtml, text, when } from '../view.js';

/** Workers whose heartbeat is older than this are shown as silent and do not count as live. */
export const LIVE_WITHIN_MS = 60_000;
/** running jobs read for the page at most */
export const RUNNING_LIMIT = 500;

const COLS: Column[] = [{ l: 'Worker' }, { l: 'Host / pid' }, { l: 'Version' }, { l: 'Queues' }, { l: 'Types' }, { l: 'Started' }, { l: 'Last heartbeat' }];

export const isLive = (w: WorkerRow, nowMs: number) => nowMs - w.heartbeatAt.getTime() <= LIVE_WITHIN_MS;

function heartbeat(w: WorkerRow, nowMs: number): Part[] {
  return isLive(w, nowMs) ? [when(w.heartbeatAt, true, nowMs)] : [text('silent ', 'err'), when(w.heartbeatAt, true, nowMs)];
}

function workerCells(w: WorkerRow, nowMs: number): Cell[] {
  return [
    cell(text(w.id, 'mono'), undefined, 'Worker'), cell(text(`${w.host} / ${w.pid}`), undefined, 'Host / pid'), cell(text(w.version), undefined, 'Version'),
    cell(w.queues ? text(w.queues.join(', ')) : text('all', 'muted'), undefined, 'Queues'), cell(text(w.types.join(', ')), undefined, 'Types'),
    cell(when(w.startedAt), undefined, 'Started'), cell(heartbeat(w, nowMs), undefined, 'Heartbeat'),
  ];
}

/** The overview's compact table. */
export function workerRows(workers: readonly WorkerRow[], nowMs: number): Cell[][] {
  return workers.map((w) => workerCells(w, nowMs));
}

export function workersTable(rows: Cell[][], csrf: string) {
  return tableHtml('workers', { cols: COLS, rows, empty: 'No worker has registered. Start one with leasehold worker --handlers ./jobs.js.' }, csrf, true);
}

export interface WorkersData {
  workers: readonly WorkerRow[];
  running: readonly JobRow[];
  nowMs: number;
}

function runningParts(ctx: PageContext, jobs: readonly JobRow[]): Part[] {
  if (jobs.length === 0) return [text('idle', 'muted')];
  return jobs.map((j) => ({ ...link(`#${j.id} ${j.type}`, `${ctx.base}/jobs/${j.id}`), c: 'blk' }));
}

export function workersLive(ctx: PageContext, d: WorkersData): Required<Pick<LiveModel, 'tables' | 'slots'>> {
  const byWorker = new Map<string, JobRow[]>();
  for (const j of d.running) {
    const holder = j.lockedBy ?? '';
    byWorker.set(holder, [...(byWorker.get(holder) ?? []), j]);
  }
  const rows = d.workers.map((w) => [...workerCells(w, d.nowMs), cell(runningParts(ctx, byWorker.get(w.id) ?? []), undefined, 'Running')]);
  const known = new Set(d.workers.map((w) => w.id));
  for (const [holder, jobs] of byWorker) {
    if (known.has(holder)) continue;
    rows.push([cell(text(holder || '(none)', 'mono'), undefined, 'Worker'), ...COLS.slice(1, -1).map(() => cell(text('—', 'muted'))), cell(text('not registered', 'err'), undefined, 'Heartbeat'), cell(runningParts(ctx, jobs), undefined, 'Running')]);
  }
  const live = d.workers.filter((w) => isLive(w, d.nowMs)).length;
  const capped = d.running.length >= RUNNING_LIMIT ? ` (the first ${RUNNING_LIMIT} shown)` : '';
  return { tables: { workers: rows }, slots: { summary: [text(`${live} live of ${d.workers.length} registered; ${d.running.length} job(s) running${capped}.`)] } };
}

export function workersPage(ctx: PageContext, d: WorkersData): PageSpec {
  const m = workersLive(ctx, d);
  const cols = [...COLS, { l: 'Running now' }];
  const body = html`<h1>Workers</h1><p class="muted" data-slot="summary">${m.slots.summary?.[0]?.t ?? ''}</p>
${tableHtml('workers', { cols, rows: m.tables.workers ?? [], empty: 'No worker has registered. Start one with leasehold worker --handlers ./jobs.js.' }, ctx.csrf, true)}`;
  return { title: 'Workers', active: 'workers', live: '/api/workers', body };
}
