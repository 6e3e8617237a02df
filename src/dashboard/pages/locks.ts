/**
 * Locks: every held lock and semaphore slot with its holder, fencing token, since when and
 * until when; one past its TTL is marked expired (free for the next acquirer).
 */
import { html } from 'hono/html';
import type { LockRow } from '../../core/schedules.js';
import type { PageContext, PageSpec } from '../layout.js';
import type { Column, LiveModel } from '../view.js';
import { badge, cell, tableHtml, text, when } from '../view.js';

const COLS: Column[] = [{ l: 'Name' }, { l: 'Slot', c: 'num' }, { l: 'Holder' }, { l: 'Fence', c: 'num' }, { l: 'Since' }, { l: 'Expires' }, { l: 'State' }];

export function locksLive(locks: readonly LockRow[], nowMs: number): Required<Pick<LiveModel, 'tables'>> {
  return {
    tables: {
      locks: locks.map((l) => [
        cell(text(l.name, 'mono'), undefined, 'Name'), cell(text(l.slot), 'num', 'Slot'), cell(text(l.owner, 'mono'), undefined, 'Holder'),
        cell(text(l.fence), 'num', 'Fence'), cell(when(l.acquiredAt), undefined, 'Since'), cell([when(l.expiresAt), text(' '), { ...when(l.expiresAt, true, nowMs), c: 'muted' }], undefined, 'Expires'),
        cell(l.expired ? badge('expired') : badge('held'), undefined, 'State'),
      ]),
    },
  };
}

export function locksPage(ctx: PageContext, locks: readonly LockRow[], nowMs: number): PageSpec {
  const m = locksLive(locks, nowMs);
  const body = html`<h1>Locks</h1><p class="muted">Locks and semaphore slots held now. The fence grows with every grant: a holder that passes it to what it writes lets that write refuse a stale holder.</p>
${tableHtml('locks', { cols: COLS, rows: m.tables.locks ?? [], empty: 'No lock is held.' }, ctx.csrf, true)}`;
  return { title: 'Locks', active: 'locks', live: '/api/locks', body };
}
