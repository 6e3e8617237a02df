/**
 * Row mapping between PostgreSQL and the storage contract's shapes, plus the checks on what
 * callers hand in (schema name, transaction handle, ids). node-postgres returns
 * bigint as string (kept for ids, converted for counts and durations), timestamptz as Date and
 * jsonb already parsed.
 */
import type pg from 'pg';
import { ValidationError } from '../../core/errors.js';
import type { JobStatus } from '../../core/status.js';
import type { ClaimedJob, EffectRow, ExpiredLease, JobCount, WorkerRow } from '../../core/storage.js';
import { rowMappers } from '../row-mapping.js';

export type Row = Record<string, unknown>;

export type Queryable = Pick<pg.ClientBase, 'query'>;

/** Validate and double-quote a schema name; only plain lower-case identifiers are accepted. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema) || schema.length > 63) {
    throw new ValidationError('INVALID_OPTION', `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _ (at most 63, not starting with a digit)`);
  }
  return `"${schema}"`;
}

/** The caller's transaction handle, checked to be a connected client (not a pool). */
export function txClient(tx: unknown): Queryable | undefined {
  if (tx === undefined || tx === null) return undefined;
  const c = tx as { query?: unknown; totalCount?: unknown };
  if (typeof c.query !== 'function' || 'totalCount' in c) {
    throw new ValidationError('INVALID_OPTION', 'tx must be a pg.Client or pg.PoolClient inside your open transaction (not a pool)');
  }
  return tx as Queryable;
}

const MAX_BIGINT = 9223372036854775807n;

/** A job/attempt id the database can hold, or null for anything else (then: "no such row"). */
export function validId(id: unknown): string | null {
  if (typeof id !== 'string') return null;
  // the ids the database hands out (no leading zero, far below 2^63) are returned as they are
  if (/^[1-9][0-9]{0,14}$/.test(id)) return id;
  if (!/^[0-9]{1,19}$/.test(id)) return null;
  return BigInt(id) <= MAX_BIGINT ? String(BigInt(id)) : null;
}

function date(v: unknown): Date {
  return v instanceof Date ? v : new Date(String(v));
}

function dateOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : date(v);
}

function str(v: unknown): string {
  return String(v);
}

function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function num(v: unknown): number {
  return Number(v);
}

/** Text for people (error messages, stacks): PostgreSQL text cannot hold NUL, so it becomes U+FFFD. */
export function safeText(s: string | null | undefined): string | null {
  return s == null ? null : s.replace(/\0/g, '\uFFFD');
}

/** JSON text for a json parameter; `undefined` is stored as JSON null. */
export function jsonParam(v: unknown): string {
  return JSON.stringify(v) ?? 'null';
}

/** jsonb/json and timestamptz come back decoded by pg */
export const { toJobRow, toAttemptRow } = rowMappers({ date, payload: (v) => v });

/**
 * A claimed job from a claim row (CLAIM_COLUMNS, as an array). The columns the claim set to
 * one value come back once: heartbeat_at and updated_at are started_at, as the claim wrote them;
 * the lease token is `base` and the id, as the claim made it (claimWithBase).
 */
export function toClaimedJob(r: unknown[], workerId: string, base: string): ClaimedJob {
  const startedAt = date(r[10]);
  const id = str(r[0]);
  const job: ClaimedJob = {
    id,
    queue: str(r[1]),
    type: str(r[2]),
    payload: r[3],
    status: 'running',
    priority: num(r[4]),
    runAt: date(r[5]),
    attempts: num(r[6]),
    maxAttempts: num(r[7]),
    idempotencyKey: strOrNull(r[8]),
    lockedBy: workerId,
    leaseToken: `${base}.${id}`,
    lockedUntil: date(r[9]),
    heartbeatAt: new Date(startedAt.getTime()),
    startedAt,
    finishedAt: dateOrNull(r[11]),
    lastErrorCode: strOrNull(r[12]),
    lastError: strOrNull(r[13]),
    timeoutMs: num(r[14]),
    maxRuntimeMs: num(r[15]),
    createdAt: date(r[16]),
    updatedAt: new Date(startedAt.getTime()),
  };
  // only jobs a schedule enqueued carry their slot
  if (r[17] != null && r[18] != null) {
    job.scheduleName = str(r[17]);
    job.slotAt = date(r[18]);
  }
  return job;
}

export function toEffectRow(r: Row): EffectRow {
  return {
    key: str(r.key),
    jobId: str(r.job_id),
    state: r.state as 'pending' | 'done',
    result: r.result ?? null,
    createdAt: date(r.created_at),
    doneAt: dateOrNull(r.done_at),
  };
}

export function toWorkerRow(r: Row): WorkerRow {
  return {
    id: str(r.id),
    host: str(r.host),
    pid: num(r.pid),
    version: str(r.version),
    queues: (r.queues ?? null) as string[] | null,
    types: (r.types ?? []) as string[],
    startedAt: date(r.started_at),
    heartbeatAt: date(r.heartbeat_at),
  };
}

export function toExpiredLease(r: Row): ExpiredLease {
  return {
    id: str(r.id),
    type: str(r.type),
    leaseToken: str(r.lease_token),
    lockedBy: strOrNull(r.locked_by),
    attempts: num(r.attempts),
    maxAttempts: num(r.max_attempts),
  };
}

export function toJobCount(r: Row): JobCount {
  return { queue: str(r.queue), type: str(r.type), status: r.status as JobStatus, count: num(r.count), due: num(r.due) };
}
