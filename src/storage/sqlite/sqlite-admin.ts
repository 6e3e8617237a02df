/**
 * Admin and listing operations on SQLite (dashboard / CLI): list, count, history, retry now,
 * cancel, prune. Plain functions over a connection and a "now" (the process clock, see
 * sqlite-storage.ts); SqliteStorage delegates. Writes run in one IMMEDIATE transaction each.
 */
import type { AttemptRow, JobCount, JobQuery, JobRow, PruneParams } from '../../core/storage.js';
import type { SqliteDb } from './sqlite-db.js';
import { toAttemptRow, toJobRow, toSqlId } from './sqlite-rows.js';
import type { SqlAttempt, SqlJob } from './sqlite-rows.js';
import { JOB_SQL, listJobsSql } from './sqlite-sql.js';

const CANCEL_MESSAGE = 'cancelled by an operator';

export function listJobs(c: SqliteDb, q: JobQuery): JobRow[] {
  let beforeId: number | null = null;
  if (q.beforeId !== undefined) {
    beforeId = toSqlId(q.beforeId);
    if (beforeId === null) return [];
  }
  const sql = listJobsSql({ status: !!q.status, queue: q.queue !== undefined, type: q.type !== undefined, beforeId: beforeId !== null });
  const params: Record<string, unknown> = { limit: q.limit };
  if (q.status) params.status = q.status;
  if (q.queue !== undefined) params.queue = q.queue;
  if (q.type !== undefined) params.type = q.type;
  if (beforeId !== null) params.beforeId = beforeId;
  const rows = c.read(() => c.stmt(sql).all(params) as SqlJob[]);
  return rows.map(toJobRow);
}

export function countJobs(c: SqliteDb, now: number): JobCount[] {
  const rows = c.read(() => c.stmt(JOB_SQL.count).all({ now }) as JobCount[]);
  return rows.map((r) => ({ queue: r.queue, type: r.type, status: r.status, count: r.count, due: r.due }));
}

export function listAttempts(c: SqliteDb, jobId: string): AttemptRow[] {
  const n = toSqlId(jobId);
  if (n === null) return [];
  const rows = c.read(() => c.stmt(JOB_SQL.attempts).all({ id: n }) as SqlAttempt[]);
  return rows.map(toAttemptRow);
}

export function retryJob(c: SqliteDb, now: number, id: string): { job: JobRow | null; applied: boolean } {
  const n = toSqlId(id);
  if (n === null) return { job: null, applied: false };
  return c.write(() => {
    const row = c.stmt(JOB_SQL.retry).get({ id: n, now }) as SqlJob | undefined;
    if (row) return { job: toJobRow(row), applied: true };
    const cur = c.stmt(JOB_SQL.get).get(n) as SqlJob | undefined;
    return { job: cur ? toJobRow(cur) : null, applied: false };
  });
}

/**
 * A running job's attempt ends as cancelled: its history row is written from the job row as it
 * was before the cancel (or, opened by a schema-2 claim, closed in place) by the finish's own
 * JOB_SQL.endAttempt, fenced by the lease just read in this transaction.
 */
export function cancelJob(c: SqliteDb, now: number, id: string): { job: JobRow | null; applied: boolean } {
  const n = toSqlId(id);
  if (n === null) return { job: null, applied: false };
  return c.write(() => {
    const before = c.stmt(JOB_SQL.get).get(n) as SqlJob | undefined;
    if (!before) return { job: null, applied: false };
    if (before.status === 'running' && before.lease_token !== null) {
      c.stmt(JOB_SQL.endAttempt).run(now, now, 'cancelled', 'CANCELLED', CANCEL_MESSAGE, null, null, n, before.lease_token, 0, now);
    }
    const row = c.stmt(JOB_SQL.cancel).get({ id: n, now, message: CANCEL_MESSAGE }) as SqlJob | undefined;
    return row ? { job: toJobRow(row), applied: true } : { job: toJobRow(before), applied: false };
  });
}

export function pruneJobs(c: SqliteDb, now: number, p: PruneParams): number {
  if (p.statuses.length === 0 || p.limit <= 0) return 0;
  const cutoff = now - p.olderThanMs;
  return c.write(() => {
    const ids = (c.stmt(JOB_SQL.pruneIds).all({ cutoff, statuses: JSON.stringify(p.statuses), limit: p.limit }) as { id: number }[]).map((r) => r.id);
    if (ids.length === 0) return 0;
    const json = JSON.stringify(ids);
    c.stmt(JOB_SQL.pruneAttempts).run({ ids: json });
    return c.stmt(JOB_SQL.pruneJobs).run({ ids: json }).changes;
  });
}
