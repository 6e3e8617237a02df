/**
 * Queues: every queue that holds jobs or was ever paused, with its depth (due, running, failed
 * waiting for a retry), the age of its oldest due job, its throughput (attempts ended in the
 * last five minutes, and how many of those failed), and whether it is paused, with Pause /
 * Resume for the whole cluster.
 */
import { html } from 'hono/html';
import type { AttemptOutcome } from '../../core/status.js';
import type { AttemptOutcomeCount, JobCount, QueueHealth, QueueState } from '../../core/storage.js';
import type { PageContext, PageSpec } from '../layout.js';
import { duration } from '../layout.js';
import type { Cell, Column, LiveModel } from '../view.js';
import { badge, button, cell, link, tableHtml, text, when } from '../view.js';
import { q } from './jobs.js';

/** the window the throughput columns count */
export const THROUGHPUT_WINDOW_MS = 5 * 60_000;
const FAILED_OUTCOMES = new Set<AttemptOutcome>(['failed', 'dead', 'timed_out', 'max_runtime', 'lease_expired', 'lease_lost']);
const NOTICES: Record<string, string> = { paused: 'The queue is paused: no worker starts its jobs until it is resumed.', resumed: 'The queue is resumed.' };

export interface QueuesData {
  /** by queue, type and status (from the bounded summary: the statuses it counted exactly) */
  counts: readonly JobCount[];
  /** false: more jobs wait for a retry than the summary counts, so `counts` has none of them */
  failedExact?: boolean | undefined;
  /** absent: the client has no queue health (due and oldest age then come from the counts) */
  health?: readonly QueueHealth[] | undefined;
  /** absent: the client cannot pause queues */
  states?: readonly QueueState[] | undefined;
  /** absent: the client cannot read attempt outcomes */
  outcomes?: readonly AttemptOutcomeCount[] | undefined;
  nowMs: number;
}

interface Line {
  queue: string;
  due: number;
  running: number;
  failed: number;
  oldestDueAgeMs: number | null;
  ended: number;
  endedFailed: number;
  state: QueueState | undefined;
}

function lines(d: QueuesData): Line[] {
  const by = new Map<string, Line>();
  const line = (queue: string): Line => {
    let l = by.get(queue);
    if (!l) by.set(queue, (l = { queue, due: 0, running: 0, failed: 0, oldestDueAgeMs: null, ended: 0, endedFailed: 0, state: undefined }));
    return l;
  };
  for (const c of d.counts) {
    const l = line(c.queue);
    if (!d.health) l.due += c.due;
    if (c.status === 'running' && !d.health) l.running += c.count;
    if (c.status === 'failed') l.failed += c.count;
  }
  for (const h of d.health ?? []) Object.assign(line(h.queue), { due: h.due, running: h.running, oldestDueAgeMs: h.oldestDueAgeMs });
  for (const s of d.states ?? []) line(s.queue).state = s;
  for (const o of d.outcomes ?? []) {
    const l = line(o.queue);
    l.ended += o.count;
    if (FAILED_OUTCOMES.has(o.outcome)) l.endedFailed += o.count;
  }
  return [...by.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** A queue's state and its button: Pause (asks nothing: Resume undoes it) or Resume. */
function stateCells(ctx: PageContext, l: Line, d: QueuesData): Cell[] {
  if (!d.states) return [];
  const paused = l.state?.paused ?? false;
  const act = button({ a: `${ctx.base}/queues/${paused ? 'resume' : 'pause'}`, l: paused ? 'Resume' : 'Pause', c: paused ? 'primary' : 'danger', v: { queue: l.queue } });
  return [
    cell(paused ? [badge('paused'), text(' since '), when(l.state?.pausedAt)] : [badge('active')], undefined, 'State'),
    cell(act, undefined, 'Action'),
  ];
}

export function queuesLive(ctx: PageContext, d: QueuesData): Required<Pick<LiveModel, 'tables'>> {
  return {
    tables: {
      queues: lines(d).map((l) => [
        cell(link(l.queue, `${ctx.base}/jobs${q({ queue: l.queue })}`), undefined, 'Queue'),
        cell(l.due ? link(l.due, `${ctx.base}/jobs${q({ queue: l.queue, status: 'queued' })}`) : text(0, 'muted'), 'num', 'Due'),
        cell(l.running ? link(l.running, `${ctx.base}/jobs${q({ queue: l.queue, status: 'running' })}`) : text(0, 'muted'), 'num', 'Running'),
        cell(d.failedExact === false ? { ...link('many', `${ctx.base}/jobs${q({ queue: l.queue, status: 'failed' })}`), ti: 'more jobs wait for a retry than the page counts' } : l.failed ? link(l.failed, `${ctx.base}/jobs${q({ queue: l.queue, status: 'failed' })}`) : text(0, 'muted'), 'num', 'Failed'),
        cell(text(l.oldestDueAgeMs === null ? '—' : coarse(l.oldestDueAgeMs)), 'num', 'Oldest due'),
        ...(d.outcomes ? [cell(text(l.ended), 'num', 'Ended 5 min'), cell(text(l.endedFailed, l.endedFailed ? 'err' : 'muted'), 'num', 'Failed 5 min')] : []),
        ...stateCells(ctx, l, d),
      ]),
    },
  };
}

/** An age to the unit that matters, so a poll answers the same while nothing moved. */
function coarse(ms: number): string {
  return ms < 60_000 ? duration(Math.round(ms / 1000) * 1000) : duration(Math.round(ms / 60_000) * 60_000);
}

export function queuesPage(ctx: PageContext, d: QueuesData, notice?: string): PageSpec {
  const m = queuesLive(ctx, d);
  const cols: Column[] = [
    { l: 'Queue' }, { l: 'Due', c: 'num' }, { l: 'Running', c: 'num' }, { l: 'Failed', c: 'num' }, { l: 'Oldest due', c: 'num' },
    ...(d.outcomes ? [{ l: 'Ended 5 min', c: 'num' }, { l: 'Failed 5 min', c: 'num' }] : []),
    ...(d.states ? [{ l: 'State' }, { l: '' }] : []),
  ];
  const msg = notice ? NOTICES[notice] : undefined;
  const body = html`<h1>Queues</h1>
${msg ? html`<div class="notice">${msg}</div>` : ''}
<p class="muted">Due: waiting with their time come. Failed: waiting for a retry. A paused queue's jobs are claimed by no worker until it is resumed; running jobs finish, enqueues go on.</p>
${tableHtml('queues', { cols, rows: m.tables.queues ?? [], empty: 'No queues yet.' }, ctx.csrf, true)}`;
  return { title: 'Queues', active: 'queues', live: '/api/queues', body };
}
