/**
 * The overview: counts by status (each a link to the list), due now and live workers; due jobs
 * that no live worker handles; alert rules' states, firing first; counts by queue (with its
 * paused state) and by type; the workers. Every number is a slot or table the script redraws.
 */
import { html } from 'hono/html';
import type { StatusTotal } from '../../core/search.js';
import type { AlertStateRow, JobCount, QueueState, WorkerRow } from '../../core/storage.js';
import { JOB_STATUSES } from '../../core/status.js';
import { DUE_READ_LIMIT } from '../../core/due-counts.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { Cell, Column, LiveModel } from '../view.js';
import { badge, cell, link, slot, tableHtml, text, when } from '../view.js';
import { countText, q } from './jobs.js';
import { isLive, workerRows, workersTable } from './workers.js';

export interface Unhandled {
  type: string;
  queue: string;
  due: number;
  /** the due jobs read stopped at their limit: at least `due` */
  capped?: boolean;
}

export interface OverviewData {
  /** by queue, type and status (with the summary: the statuses it counted exactly) */
  counts: readonly JobCount[];
  /** each status's total from the bounded summary (exact, "about N" or "N+"); absent: summed from counts */
  totals?: readonly StatusTotal[] | undefined;
  workers: readonly WorkerRow[];
  unhandled: readonly Unhandled[];
  alerts: readonly AlertStateRow[];
  /** paused states; absent when the client cannot pause */
  queues?: readonly QueueState[] | undefined;
  nowMs: number;
}

type Live = Required<Omit<LiveModel, 'marks'>>;

function byKey(counts: readonly JobCount[], by: (c: JobCount) => string, alsoKeys: readonly string[] = []): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>(alsoKeys.map((k) => [k, new Map<string, number>()]));
  for (const c of counts) {
    const row = out.get(by(c)) ?? new Map<string, number>();
    row.set(c.status, (row.get(c.status) ?? 0) + c.count);
    out.set(by(c), row);
  }
  return out;
}

const countCols = (label: string, state: boolean): Column[] => [{ l: label }, ...JOB_STATUSES.map((s) => ({ l: s, c: 'num' })), ...(state ? [{ l: 'State' }] : [])];

function countRows(ctx: PageContext, param: 'queue' | 'type', rows: Map<string, Map<string, number>>, state?: (key: string) => Cell): Cell[][] {
  return [...rows.keys()].sort().map((k) => {
    const r = rows.get(k) ?? new Map<string, number>();
    const cells = JOB_STATUSES.map((s) => {
      const n = r.get(s) ?? 0;
      return cell(n ? link(n, `${ctx.base}/jobs${q({ [param]: k, status: s })}`) : text(0, 'muted'), 'num', s);
    });
    return [cell(link(k, `${ctx.base}/jobs${q({ [param]: k })}`)), ...cells, ...(state ? [state(k)] : [])];
  });
}

export function overviewLive(ctx: PageContext, d: OverviewData): Live {
  const totals = new Map<string, number>();
  let due = 0;
  for (const c of d.counts) {
    totals.set(c.status, (totals.get(c.status) ?? 0) + c.count);
    due += c.due;
  }
  const live = d.workers.filter((w) => isLive(w, d.nowMs));
  const slots: Live['slots'] = { 'n.due': [text(due)], 'n.workers': [text(live.length)] };
  for (const s of JOB_STATUSES) {
    const t = d.totals?.find((x) => x.status === s);
    slots[`n.${s}`] = [t && !t.exact ? text(countText(t).replace(/ jobs?$/, ''), undefined, 'counted up to a bound, or estimated') : text(t ? t.count : (totals.get(s) ?? 0))];
  }
  const firing = d.alerts.filter((a) => a.state === 'firing');
  slots.firing = [text(`${firing.length} alert(s) firing.`)];
  const unhandled = d.unhandled.reduce((a, u) => a + u.due, 0);
  // the read of due jobs is bounded: past its limit the number is a floor, and say so
  slots['unhandled.total'] = [text(d.unhandled.some((u) => u.capped) ? `At least ${unhandled} due job(s) wait for a worker that handles their type (the count reads ${DUE_READ_LIMIT.toLocaleString('en-US')} due jobs at most).` : `${unhandled} due job(s) wait for a worker that handles their type.`)];
  const paused = new Set((d.queues ?? []).filter((s) => s.paused).map((s) => s.queue));
  const queueState = d.queues && ((k: string) => cell(paused.has(k) ? link('paused', `${ctx.base}/queues`, 'badge s-paused') : text('active', 'muted'), undefined, 'State'));
  return {
    slots,
    tables: {
      unhandled: d.unhandled.map((u) => [cell(link(u.type, `${ctx.base}/jobs${q({ type: u.type, queue: u.queue })}`)), cell(text(u.queue)), cell(text(u.capped ? `${u.due}+` : u.due), 'num')]),
      alerts: [...firing, ...d.alerts.filter((a) => a.state !== 'firing')].map((a) => [
        cell(text(a.rule), 'mono'), cell(badge(a.state === 'firing' ? 'firing' : 'ok')), cell([when(a.since), text(' '), when(a.since, true, d.nowMs)]),
        cell(text(a.value === null ? '—' : String(Math.round(a.value * 1000) / 1000)), 'num'), cell(text(a.episode), 'num'),
      ]),
      queues: countRows(ctx, 'queue', byKey(d.counts, (c) => c.queue, d.queues?.map((s) => s.queue)), queueState),
      types: countRows(ctx, 'type', byKey(d.counts, (c) => c.type)),
      workers: workerRows(d.workers, d.nowMs),
    },
    show: { unhandled: d.unhandled.length > 0, alerts: d.alerts.length > 0, firing: firing.length > 0 },
  };
}

const ALERT_COLS: Column[] = [{ l: 'Rule' }, { l: 'State' }, { l: 'Since' }, { l: 'Value', c: 'num' }, { l: 'Episode', c: 'num' }];
const UNHANDLED_COLS: Column[] = [{ l: 'Type' }, { l: 'Queue' }, { l: 'Due', c: 'num' }];

export function overviewPage(ctx: PageContext, d: OverviewData): PageSpec {
  const m = overviewLive(ctx, d);
  const s = (name: string, tag: 'span' | 'div' = 'span', cls = '') => slot(name, m.slots[name] ?? [], ctx.csrf, tag, cls);
  const hidden = (name: string) => (m.show[name] ? '' : html` hidden`);
  const body = html`<h1>Overview</h1>
<div class="notice warn" data-show="unhandled"${hidden('unhandled')}><strong>${s('unhandled.total')}</strong> They are not failed; they wait until a worker with a handler for the type (and queue) is running.
${tableHtml('unhandled', { cols: UNHANDLED_COLS, rows: m.tables.unhandled ?? [], empty: 'None.' }, ctx.csrf)}</div>
<div class="tiles">${JOB_STATUSES.map((st) => html`<a class="tile" href="${ctx.base}/jobs${q({ status: st })}">${s(`n.${st}`, 'div', 'n')}<div class="l"><span class="badge s-${st}">${st}</span></div></a>`)}
<div class="tile">${s('n.due', 'div', 'n')}<div class="l">due now</div></div>
<a class="tile" href="${ctx.base}/workers">${s('n.workers', 'div', 'n')}<div class="l">live workers</div></a></div>
<section data-show="alerts"${hidden('alerts')}><h2>Alerts</h2><div class="notice bad" data-show="firing"${hidden('firing')}><strong>${s('firing')}</strong> Notifications went to the configured log, callback and webhooks.</div>
${tableHtml('alerts', { cols: ALERT_COLS, rows: m.tables.alerts ?? [], empty: 'No alert rule has fired.' }, ctx.csrf)}</section>
<h2>By queue</h2>${tableHtml('queues', { cols: countCols('Queue', d.queues !== undefined), rows: m.tables.queues ?? [], empty: 'No jobs yet.' }, ctx.csrf)}
<h2>By type</h2>${tableHtml('types', { cols: countCols('Type', false), rows: m.tables.types ?? [], empty: 'No jobs yet.' }, ctx.csrf)}
<h2>Workers</h2>${workersTable(m.tables.workers ?? [], ctx.csrf)}`;
  return { title: 'Overview', active: 'overview', live: '/api/overview', body };
}
