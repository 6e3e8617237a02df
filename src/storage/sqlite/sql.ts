/**
 * The SQL plumbing every SQLite aggregate shares: the table prefix, the next job id, row shapes
 * as SQLite returns them and their mapping to the contract's types. Times are INTEGER epoch
 * milliseconds (the process clock, bound as `@now`); JSON columns are TEXT.
 *
 * Every statement lives in the aggregate file that runs it, with a one-line `-- leasehold …`
 * header inside its text. `{p}` in a template is the table prefix (default `leasehold_`).
 */
import type { AttemptOutcome, JobStatus } from '../../core/status.js';
import type { EffectRow, ExpiredLease, JobRow, WorkerRow } from '../../core/storage.js';
import { rowMappers } from '../row-mapping.js';

export interface SqlJob {
  id: number;
  queue: string;
  type: string;
  payload: string;
  status: JobStatus;
  priority: number;
  run_at: number;
  attempts: number;
  max_attempts: number;
  idempotency_key: string | null;
  locked_by: string | null;
  lease_token: string | null;
  locked_until: number | null;
  heartbeat_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  last_error_code: string | null;
  last_error: string | null;
  timeout_ms: number;
  max_runtime_ms: number;
  created_at: number;
  updated_at: number;
  schedule_name?: string | null;
  slot_at?: number | null;
  trace_context?: string | null;
  concurrency_key?: string | null;
  unique_key?: string | null;
}

/** The succeeded job rows that hold their attempt (attempts.ts): the only place that says which. */
export const HOLDS_SUCCESS = "status = 'succeeded' AND lease_token IS NOT NULL";

export interface SqlAttempt {
  /** a row's id; 'running:' or 'succeeded:' + job id for the attempt its job row holds */
  id: number | string;
  job_id: number;
  attempt: number;
  worker_id: string;
  lease_token: string;
  started_at: number;
  finished_at: number | null;
  duration_ms: number | null;
  outcome: AttemptOutcome;
  error_code: string | null;
  error_message: string | null;
  error_stack: string | null;
  retry_delay_ms: number | null;
  wait_ms: number;
}

export interface SqlEffect {
  key: string;
  job_id: number;
  lease_token: string | null;
  state: 'pending' | 'done';
  result: string | null;
  created_at: number;
  done_at: number | null;
}

export interface SqlWorker {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: string | null;
  types: string;
  started_at: number;
  heartbeat_at: number;
}

export type SqlExpired = Pick<SqlJob, 'id' | 'type' | 'lease_token' | 'locked_by' | 'attempts' | 'max_attempts'>;

/** Allowed table prefixes: an identifier, so it can be spliced into SQL safely. */
const PREFIX_RE = /^[A-Za-z_][A-Za-z0-9_]{0,40}$/;

export function checkPrefix(prefix: string): string {
  if (prefix !== '' && !PREFIX_RE.test(prefix)) {
    throw new TypeError(`invalid tablePrefix ${JSON.stringify(prefix)}: letters, digits and _ only`);
  }
  return prefix;
}

/** Replace `{p}` with the table prefix. */
export function withPrefix(sql: string, prefix: string): string {
  return sql.replaceAll('{p}', prefix);
}

/**
 * The next job id: above every id in the table and above the floor, which holds the largest id
 * deleted, so ids are never reused. Read under the write lock every insert holds; an
 * uncorrelated subquery, evaluated once per statement.
 */
export const NEXT_JOB_ID = `(SELECT max(coalesce((SELECT max(id) FROM {p}jobs), 0), floor) + 1 FROM {p}job_id_floor)`;

const date = (ms: number): Date => new Date(ms);
export const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/** A contract id (decimal string) as a SQLite integer; null when it cannot name a row. */
export function toSqlId(id: string): number | null {
  if (!/^[0-9]{1,16}$/.test(id)) return null;
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : null;
}

/** JSON for a TEXT column; `undefined` becomes SQL NULL so it reads back as undefined. */
export function jsonOrNull(v: unknown): string | null {
  const s = JSON.stringify(v);
  return s === undefined ? null : s;
}

export function parseJsonOrUndefined(s: string | null): unknown {
  return s === null ? undefined : JSON.parse(s);
}

/** times are epoch-millisecond integers, the payload JSON text */
const mappers = rowMappers({ date: (v) => new Date(Number(v)), payload: (v) => JSON.parse(String(v)) });
export const { toAttemptRow, toBatchRow } = mappers;

/** A job as the contract shows it: a succeeded job row may keep its attempt's worker and token (attempts.ts); a lease shows only while it runs. */
export function toJobRow(row: object): JobRow {
  const job = mappers.toJobRow(row);
  return job.status === 'succeeded' ? { ...job, lockedBy: null, leaseToken: null } : job;
}

export function toEffectRow(r: SqlEffect): EffectRow {
  return {
    key: r.key,
    jobId: String(r.job_id),
    state: r.state,
    result: parseJsonOrUndefined(r.result),
    createdAt: date(r.created_at),
    doneAt: dateOrNull(r.done_at),
  };
}

export function toWorkerRow(r: SqlWorker): WorkerRow {
  return {
    id: r.id,
    host: r.host,
    pid: r.pid,
    version: r.version,
    queues: r.queues === null ? null : (JSON.parse(r.queues) as string[]),
    types: JSON.parse(r.types) as string[],
    startedAt: date(r.started_at),
    heartbeatAt: date(r.heartbeat_at),
  };
}

export function toExpiredLease(r: SqlExpired): ExpiredLease {
  return {
    id: String(r.id),
    type: r.type,
    leaseToken: r.lease_token ?? '',
    lockedBy: r.locked_by,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
  };
}
