/**
 * Schedules: name, cron and zone or interval, job type, queue, misfire policy, the next five
 * fire times in the schedule's own zone (croner, through the runtime's cron module), last run,
 * and Enable / Disable / Run now when the client has them.
 */
import { html } from 'hono/html';
import type { ScheduleRow } from '../../core/schedules.js';
import { nextAfterFor } from '../../runtime/cron.js';
import type { PageContext, PageSpec } from '../layout.js';
import { duration } from '../layout.js';
import type { Cell, Column, LiveModel, Part } from '../view.js';
import { button, cell, iso, link, tableHtml, text, when } from '../view.js';

export interface SchedulesData {
  schedules: readonly ScheduleRow[];
  /** the client can enable, disable and run schedules */
  actions: boolean;
  nowMs: number;
}

/** 2026-03-15 03:00:00 CET: a wall-clock time in `zone`, with the zone's abbreviation. */
export function inZone(d: Date, zone: string): string {
  const f = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'short' });
  const p: Record<string, string> = {};
  for (const x of f.formatToParts(d)) p[x.type] = x.value;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
}

/** The next `n` fire times: from next_run_at while enabled (the slot the scheduler fires next), else from now. */
export function nextFires(s: ScheduleRow, nowMs: number, n = 5): Date[] {
  const next = nextAfterFor(s);
  const out: Date[] = [];
  let t: Date | null = s.enabled && s.nextRunAt ? s.nextRunAt : next(new Date(nowMs));
  while (t && out.length < n) {
    out.push(t);
    t = next(t);
  }
  return out;
}

function fires(s: ScheduleRow, nowMs: number): Part[] {
  try {
    const times = nextFires(s, nowMs);
    if (times.length === 0) return [text('never again', 'muted')];
    return times.map((d) => ({ t: inZone(d, s.timezone), c: 'blk mono', ti: iso(d) }));
  } catch (e) {
    return [text(`cannot be evaluated: ${(e as Error).message}`, 'err')];
  }
}

function actionCell(ctx: PageContext, s: ScheduleRow): Cell {
  const v = { name: s.name };
  return cell([
    button({ a: `${ctx.base}/schedules/${s.enabled ? 'disable' : 'enable'}`, l: s.enabled ? 'Disable' : 'Enable', c: s.enabled ? 'danger' : 'primary', v }),
    button({ a: `${ctx.base}/schedules/run`, l: 'Run now', v }),
  ], undefined, 'Actions');
}

export function schedulesLive(ctx: PageContext, d: SchedulesData): Required<Pick<LiveModel, 'tables'>> {
  return {
    tables: {
      schedules: d.schedules.map((s) => [
        cell(text(s.name), undefined, 'Name'),
        cell(text(s.cron ? `${s.cron} (${s.timezone})` : `every ${duration(s.everyMs)}`, 'mono'), undefined, 'When'),
        cell(link(s.type, `${ctx.base}/jobs?type=${encodeURIComponent(s.type)}`), undefined, 'Job type'),
        cell(text(s.queue), undefined, 'Queue'),
        cell(text(s.misfire), undefined, 'Misfire'),
        cell(s.enabled ? fires(s, d.nowMs) : [text('disabled', 'muted')], undefined, 'Next five'),
        cell(when(s.lastRunAt), undefined, 'Last run'),
        cell(s.enabled ? text('yes') : text('no', 'err'), undefined, 'Enabled'),
        ...(d.actions ? [actionCell(ctx, s)] : []),
      ]),
    },
  };
}

const NOTICES: Record<string, string> = { enabled: 'The schedule is enabled; it fires from its next slot on.', disabled: 'The schedule is disabled; it fires nothing until enabled.' };

export function schedulesPage(ctx: PageContext, d: SchedulesData, notice?: { done?: string | undefined; job?: string | undefined }): PageSpec {
  const m = schedulesLive(ctx, d);
  const cols: Column[] = [{ l: 'Name' }, { l: 'When' }, { l: 'Job type' }, { l: 'Queue' }, { l: 'Misfire' }, { l: 'Next five (its zone)' }, { l: 'Last run' }, { l: 'Enabled' }, ...(d.actions ? [{ l: '' }] : [])];
  const msg = notice?.done === 'ran' && notice.job
    ? html`<div class="notice">Enqueued <a href="${ctx.base}/jobs/${notice.job}">job ${notice.job}</a> for the schedule; its regular slots are unchanged.</div>`
    : notice?.done && NOTICES[notice.done] ? html`<div class="notice">${NOTICES[notice.done]}</div>` : '';
  const body = html`<h1>Schedules</h1>${msg}
${tableHtml('schedules', { cols, rows: m.tables.schedules ?? [], empty: 'No schedules.' }, ctx.csrf, true)}`;
  return { title: 'Schedules', active: 'schedules', live: '/api/schedules', body };
}
