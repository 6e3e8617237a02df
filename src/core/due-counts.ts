/**
 * queues.dueCounts: due jobs by queue, type and status, counted over a bounded read of the due
 * jobs (the claim index), never a GROUP BY over every job. What answers "which due jobs wait for
 * a handler" on every poll of the overview, every sweep and every alert evaluation.
 */
import { ValidationError } from './errors.js';
import type { JobCount } from './storage-jobs.js';

/** How many due jobs a caller reads by default: enough to find every stuck type, bounded. */
export const DUE_READ_LIMIT = 10_000;
export const MAX_DUE_READ_LIMIT = 100_000;

/** What `queues.dueCounts` reads. */
export interface DueCountsQuery {
  /** read at most this many due jobs (default DUE_READ_LIMIT, at most MAX_DUE_READ_LIMIT) */
  limit?: number | undefined;
}

/** Due jobs by queue, type and status, from at most `limit` of them. */
export interface DueCounts {
  /** one row per (queue, type, status) among the jobs read; `count` and `due` both count the due ones read */
  counts: JobCount[];
  /** true when fewer than `limit` due jobs were read, so every one was (exact counts); false: the read stopped at its limit, more may be due */
  complete: boolean;
}

/** The limit a dueCounts read uses; a ValidationError when it is not a whole number in range. */
export function checkDueCounts(p: DueCountsQuery | undefined): { limit: number } {
  const v = p?.limit;
  if (v === undefined) return { limit: DUE_READ_LIMIT };
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_DUE_READ_LIMIT) {
    throw new ValidationError('INVALID_OPTION', `limit must be a whole number from 1 to ${MAX_DUE_READ_LIMIT}; got ${String(v)}`);
  }
  return { limit: v };
}

/** Pure: the counts of the due rows read (queue, type, status and how many per row); a read that reached its limit may have left some. */
export function dueCountsOf(rows: readonly { queue: string; type: string; status: JobCount['status']; n: number }[], limit: number): DueCounts {
  const counts = rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.n, due: r.n }));
  counts.sort((a, b) => cmp(a.queue, b.queue) || cmp(a.type, b.type) || cmp(a.status, b.status));
  return { counts, complete: counts.reduce((a, c) => a + c.count, 0) < limit };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
