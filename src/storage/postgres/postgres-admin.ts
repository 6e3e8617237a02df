/**
 * Admin and listing operations on PostgreSQL (dashboard / CLI): one job, list, count, history,
 * retry now, cancel, prune. Plain functions over the pool that PostgresStorage delegates to;
 * the SQL is in postgres-sql-admin.ts. An id that is not a job id finds nothing.
 */
import type pg from 'pg';
import { ValidationError } from '../../core/errors.js';
import type { AttemptRow, JobCount, JobQuery, JobRow, PruneParams } from '../../core/storage.js';
import { query, transaction } from './postgres-db.js';
import { toAttemptRow, toJobCount, toJobRow, validId, type Queryable } from './postgres-rows.js';
import type { adminSql } from './postgres-sql-admin.js';

type AdminSql = ReturnType<typeof adminSql>;

export async function getJob(db: Queryable, sql: AdminSql, id: string): Promise<JobRow | null> {
  const v = validId(id);
  if (v === null) return null;
  const [row] = await query(db, 'getJob', sql.getJob, [v]);
  return row ? toJobRow(row) : null;
}

export async function listJobs(db: Queryable, sql: AdminSql, q: JobQuery): Promise<JobRow[]> {
  let before: string | null = null;
  if (q.beforeId !== undefined) {
    before = validId(q.beforeId);
    if (before === null) throw new ValidationError('INVALID_OPTION', `beforeId must be a job id, got "${q.beforeId}"`);
  }
  if (q.limit <= 0) return [];
  const rows = await query(db, 'listJobs', sql.listJobs, [q.status ?? null, q.queue ?? null, q.type ?? null, before, q.limit]);
  return rows.map(toJobRow);
}

export async function countJobs(db: Queryable, sql: AdminSql): Promise<JobCount[]> {
  const rows = await query(db, 'countJobs', sql.countJobs);
  return rows.map(toJobCount);
}

export async function listAttempts(db: Queryable, sql: AdminSql, jobId: string): Promise<AttemptRow[]> {
  const v = validId(jobId);
  if (v === null) return [];
  return (await query(db, 'listAttempts', sql.listAttempts, [v])).map(toAttemptRow);
}

/** `notify`: the NOTIFY channel and payload (the schema) for the wake-up of the job due now. */
export async function retryJob(db: Queryable, sql: AdminSql, id: string, notify: [string, string]): Promise<{ job: JobRow | null; applied: boolean }> {
  const v = validId(id);
  if (v === null) return { job: null, applied: false };
  const [row] = await query(db, 'retryJob', sql.retryJob, [v, ...notify]);
  return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
}

/** In a transaction of its own: the row is locked first, so a claim committing meanwhile has its attempt row closed too. */
export async function cancelJob(pool: pg.Pool, sql: AdminSql, id: string): Promise<{ job: JobRow | null; applied: boolean }> {
  const v = validId(id);
  if (v === null) return { job: null, applied: false };
  return transaction(pool, 'cancelJob', async (c) => {
    const [locked] = await query(c, 'cancelJob', sql.lockJob, [v]);
    if (!locked) return { job: null, applied: false };
    const [row] = await query(c, 'cancelJob', sql.cancelJob, [v, 'cancelled by an operator', locked.lease_token ?? null]);
    return row ? { job: toJobRow(row), applied: row.applied === true } : { job: null, applied: false };
  });
}

export async function pruneJobs(db: Queryable, sql: AdminSql, p: PruneParams): Promise<number> {
  if (p.limit <= 0 || p.statuses.length === 0) return 0;
  const [row] = await query(db, 'pruneJobs', sql.pruneJobs, [[...p.statuses], p.olderThanMs, p.limit]);
  return Number(row?.n ?? 0);
}
