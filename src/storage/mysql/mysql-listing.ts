/**
 * Reads on MySQL/MariaDB: the listings behind the dashboard and the CLI (one job, filtered job
 * lists, counts, a job's attempt history, the effect ledger) and the sweeper's expired leases.
 * Each is one statement on the pool through `one` (MysqlStorage's: retried on lock or
 * connection errors); the SQL is in mysql-sql.ts. An id that is not a job id finds nothing.
 */
import type { AttemptRow, EffectRow, ExpiredLease, ExpiredLeaseQuery, JobCount, JobQuery, JobRow } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import type { Queryable } from './mysql-db.js';
import { idParam, run, toAttemptRow, toEffectRow, toJobRow } from './mysql-db.js';
import type { MysqlSql } from './mysql-sql.js';

/** One statement (a read or an idempotent write) on the pool, retried on lock or connection errors. */
export type RunOne = <T>(what: string, fn: (c: Queryable) => Promise<T>) => Promise<T>;

export async function findExpiredLeases(one: RunOne, sql: MysqlSql, params: ExpiredLeaseQuery): Promise<ExpiredLease[]> {
  const types = params.types;
  if (params.limit <= 0 || types?.length === 0) return [];
  const values = types === undefined ? [params.limit] : [[...types], params.limit];
  const rows = await one('findExpiredLeases', (c) => run(c, sql.expiredLeases(types !== undefined), values));
  return rows.map((r) => ({
    id: String(r.id),
    type: String(r.type),
    leaseToken: String(r.lease_token),
    lockedBy: r.locked_by === null ? null : String(r.locked_by),
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
  }));
}

export async function getJob(one: RunOne, sql: MysqlSql, id: string): Promise<JobRow | null> {
  const idp = idParam(id);
  if (idp === null) return null;
  const rows = await one('getJob', (c) => run(c, sql.jobById, [idp]));
  return rows[0] ? toJobRow(rows[0]) : null;
}

export async function listJobs(one: RunOne, sql: MysqlSql, query: JobQuery): Promise<JobRow[]> {
  const filters: [string, unknown][] = [];
  if (query.status !== undefined) filters.push(['status = ?', query.status]);
  if (query.queue !== undefined) filters.push(['queue = ?', query.queue]);
  if (query.type !== undefined) filters.push(['type = ?', query.type]);
  if (query.beforeId !== undefined) {
    const before = idParam(query.beforeId);
    if (before === null) return [];
    filters.push(['id < ?', before]);
  }
  const where = filters.map((f) => f[0]);
  const values = filters.map((f) => f[1]);
  if (query.limit <= 0) return [];
  values.push(query.limit);
  const rows = await one('listJobs', (c) => run(c, sql.listJobs(where), values));
  return rows.map(toJobRow);
}

export async function countJobs(one: RunOne, sql: MysqlSql): Promise<JobCount[]> {
  const rows = await one('countJobs', (c) => run(c, sql.countJobs));
  return rows.map((r) => ({
    queue: String(r.queue),
    type: String(r.type),
    status: String(r.status) as JobStatus,
    count: Number(r.n),
    due: Number(r.due ?? 0),
  }));
}

export async function listAttempts(one: RunOne, sql: MysqlSql, jobId: string): Promise<AttemptRow[]> {
  const idp = idParam(jobId);
  if (idp === null) return [];
  const rows = await one('listAttempts', (c) => run(c, sql.listAttempts, [idp, idp]));
  return rows.map(toAttemptRow);
}

export async function getEffect(one: RunOne, sql: MysqlSql, key: string): Promise<EffectRow | null> {
  const [row] = await one('getEffect', (c) => run(c, sql.effectByKey, [key]));
  return row ? toEffectRow(row) : null;
}

export async function listEffects(one: RunOne, sql: MysqlSql, params: { jobId?: string; limit: number }): Promise<EffectRow[]> {
  if (params.limit <= 0) return [];
  const values: unknown[] = [];
  if (params.jobId !== undefined) {
    const idp = idParam(params.jobId);
    if (idp === null) return [];
    values.push(idp);
  }
  values.push(params.limit);
  const rows = await one('listEffects', (c) => run(c, sql.listEffects(params.jobId !== undefined), values));
  return rows.map(toEffectRow);
}

export async function countEffects(one: RunOne, sql: MysqlSql): Promise<number> {
  const rows = await one('countEffects', (c) => run(c, sql.countEffects));
  return Number(rows[0]?.n ?? 0);
}
