/**
 * SQL plumbing every aggregate shares: the clock, durations, the job columns, checks on what
 * callers hand in (schema name, ids, text), and row decoding. node-postgres returns bigint as
 * string (kept for ids, converted for counts and durations), timestamptz as Date and json
 * already parsed.
 */
import { ValidationError } from '../../core/errors.js';
import type { LockRow, MisfirePolicy, ScheduleRow, ScheduleSource } from '../../core/schedules.js';
import type { JobStatus } from '../../core/status.js';
import type { EffectRow, ExpiredLease, JobCount, WorkerRow } from '../../core/storage.js';
import { rowMappers } from '../row-mapping.js';

/** The database clock at millisecond precision, the precision of a JS Date: values written and compared are exactly what callers read back. */
export const NOW = "date_trunc('milliseconds', now())";

/** SQL for `ms` milliseconds (a float8 parameter or expression) as an interval. */
export const ms = (expr: string): string => `(${expr} * interval '1 millisecond')`;

/** SQL for the whole milliseconds from `start` to now (an attempt's duration). */
export const durationSince = (start: string): string => `greatest(0, round(extract(epoch FROM ${NOW} - ${start}) * 1000))::bigint`;

/** SQL for the whole milliseconds from a job's due time to its attempt's start (the attempt's wait_ms). */
export const waitSince = (runAt: string, startedAt: string): string => `greatest(0, round(extract(epoch FROM ${startedAt} - ${runAt}) * 1000))::bigint`;

/** Every column of a job row, listed: prepared statements refuse a `*` whose columns a migration changed. */
export const JOB_COLUMNS = [
  'id', 'queue', 'type', 'payload', 'status', 'priority', 'run_at', 'attempts', 'max_attempts',
  'idempotency_key', 'locked_by', 'lease_token', 'locked_until', 'heartbeat_at', 'started_at',
  'finished_at', 'last_error_code', 'last_error', 'timeout_ms', 'max_runtime_ms', 'created_at',
  'updated_at', 'schedule_name', 'slot_at', 'trace_context', 'concurrency_key', 'unique_key',
] as const;

/** The job columns, each qualified by `alias`. */
export const jobColumns = (alias: string): string => JOB_COLUMNS.map((c) => `${alias}.${c}`).join(', ');

/** Validate and double-quote a schema name; only plain lower-case identifiers are accepted. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema) || schema.length > 63) {
    throw new ValidationError('INVALID_OPTION', `invalid PostgreSQL schema name "${schema}": use lower-case letters, digits and _ (at most 63, not starting with a digit)`);
  }
  return `"${schema}"`;
}

const MAX_BIGINT = 9223372036854775807n;

/** A job id the database can hold, or null for anything else (then: "no such row"). */
export function validId(id: unknown): string | null {
  if (typeof id !== 'string') return null;
  // the ids the database hands out (no leading zero, far below 2^63) are returned as they are
  if (/^[1-9][0-9]{0,14}$/.test(id)) return id;
  if (!/^[0-9]{1,19}$/.test(id)) return null;
  return BigInt(id) <= MAX_BIGINT ? String(BigInt(id)) : null;
}

/** Text for people (error messages, stacks): PostgreSQL text cannot hold NUL, so it becomes U+FFFD. */
export function safeText(s: string | null | undefined): string | null {
  return s == null ? null : s.replace(/\0/g, '\uFFFD');
}

/** JSON text for a json parameter; `undefined` is stored as JSON null. */
export function jsonParam(v: unknown): string {
  return JSON.stringify(v) ?? 'null';
}

/** A time as pg parsed it, or as epoch milliseconds where a statement sends it so. */
export function date(v: unknown): Date {
  if (v instanceof Date) return v;
  return typeof v === 'number' ? new Date(v) : new Date(String(v));
}

export function dateOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : date(v);
}

export function strOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : Number(v);
}

/** json and timestamptz come back decoded by pg */
export const { toJobRow, toAttemptRow, toBatchRow } = rowMappers({ date, payload: (v) => v });

export function toEffectRow(r: Record<string, unknown>): EffectRow {
  return {
    key: String(r.key),
    jobId: String(r.job_id),
    state: r.state as 'pending' | 'done',
    result: r.result ?? null,
    createdAt: date(r.created_at),
    doneAt: dateOrNull(r.done_at),
  };
}

export function toWorkerRow(r: Record<string, unknown>): WorkerRow {
  return {
    id: String(r.id),
    host: String(r.host),
    pid: Number(r.pid),
    version: String(r.version),
    queues: (r.queues ?? null) as string[] | null,
    types: (r.types ?? []) as string[],
    startedAt: date(r.started_at),
    heartbeatAt: date(r.heartbeat_at),
  };
}

export function toExpiredLease(r: Record<string, unknown>): ExpiredLease {
  return {
    id: String(r.id),
    type: String(r.type),
    leaseToken: String(r.lease_token),
    lockedBy: strOrNull(r.locked_by),
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
  };
}

export function toJobCount(r: Record<string, unknown>): JobCount {
  return { queue: String(r.queue), type: String(r.type), status: r.status as JobStatus, count: Number(r.count), due: Number(r.due) };
}

export function toScheduleRow(r: Record<string, unknown>): ScheduleRow {
  return {
    name: String(r.name), cron: strOrNull(r.cron), everyMs: numOrNull(r.every_ms), timezone: String(r.timezone),
    type: String(r.type), payload: r.payload, queue: String(r.queue), priority: Number(r.priority), maxAttempts: Number(r.max_attempts),
    misfire: r.misfire as MisfirePolicy, misfireWindowMs: numOrNull(r.misfire_window_ms), misfireMax: Number(r.misfire_max),
    enabled: r.enabled === true, source: r.source as ScheduleSource, nextRunAt: dateOrNull(r.next_run_at), lastRunAt: dateOrNull(r.last_run_at),
    lastSlotAt: dateOrNull(r.last_slot_at), createdAt: date(r.created_at), updatedAt: date(r.updated_at),
  };
}

export function toLockRow(r: Record<string, unknown>): LockRow {
  return {
    name: String(r.name), slot: Number(r.slot), owner: r.owner == null ? '' : String(r.owner), fence: Number(r.fence),
    acquiredAt: date(r.acquired_at), expiresAt: date(r.expires_at), expired: r.expired === true,
  };
}
