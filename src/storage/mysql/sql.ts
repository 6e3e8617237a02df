/**
 * Shared SQL plumbing of the MySQL/MariaDB adapter: table names, the job row's columns, values
 * in and out, row decoding, and the statements more than one aggregate runs. Each aggregate's
 * own SQL is in its file, every statement starting with a `-- leasehold …` line saying what it
 * does (it shows in the processlist and the slow log).
 *
 * Rules kept throughout: time is `UTC_TIMESTAMP(6)` (never NOW(), which follows the session
 * time zone) into DATETIME(6) columns that hold UTC; durations arrive in microseconds as
 * `INTERVAL ? MICROSECOND`; ids are bound as BigInt; `IN (?)` takes a JS array. Lease tokens
 * from JSON_TABLE are compared as bytes: its columns' collation differs from the tables' binary
 * one, and tokens are ASCII, so byte equality is the exact match the fence needs.
 */
import { rowMappers } from '../row-mapping.js';

/** The database's clock, UTC, microseconds; constant within one statement. */
export const NOW = 'UTC_TIMESTAMP(6)';

export type Row = Record<string, unknown>;

/** The adapter's tables under one prefix. */
export interface Tables {
  jobs: string;
  attempts: string;
  events: string;
  effects: string;
  workers: string;
  schedules: string;
  locks: string;
  alerts: string;
  queueStates: string;
  flowBuckets: string;
  ledger: string;
  dependencies: string;
  batches: string;
}

export function tables(prefix: string): Tables {
  return {
    jobs: `${prefix}jobs`,
    attempts: `${prefix}job_attempts`,
    events: `${prefix}job_events`,
    effects: `${prefix}effects`,
    workers: `${prefix}workers`,
    schedules: `${prefix}schedules`,
    locks: `${prefix}locks`,
    alerts: `${prefix}alert_states`,
    queueStates: `${prefix}queue_states`,
    flowBuckets: `${prefix}flow_buckets`,
    ledger: `${prefix}migrations`,
    dependencies: `${prefix}job_dependencies`,
    batches: `${prefix}batches`,
  };
}

/** Column list of a job row, as the row mapper reads it. */
export const JOB_COLS = `id, queue, type, payload, status, priority, run_at, attempts, max_attempts, idempotency_key,
  locked_by, lease_token, locked_until, heartbeat_at, started_at, finished_at, last_error_code, last_error,
  timeout_ms, max_runtime_ms, created_at, updated_at, schedule_name, slot_at, trace_context, concurrency_key, unique_key,
  result, progress, progress_note, progress_at, pending_parents, dependents, parent_policy, batch_id`;

/** What a claim reads of each candidate: the claimed job minus what the claim itself sets. */
export const CLAIM_COLS = `id, queue, type, payload, priority, run_at, attempts, max_attempts, idempotency_key,
  finished_at, last_error_code, last_error, timeout_ms, max_runtime_ms, created_at, schedule_name, slot_at, trace_context,
  concurrency_key, unique_key`;

/** A claim's filter leaving out paused queues: a plain read of the tiny table, which the claim's FOR UPDATE does not lock. */
export const notPaused = (t: Tables): string => `queue NOT IN (SELECT queue FROM ${t.queueStates} WHERE paused = 1)`;

/** Claim order: priority, run_at (DATETIME texts sort as times), id (decimal texts: by length, then by text). */
export function compareClaimOrder(a: Row, b: Row): number {
  const [pa, pb, ra, rb, ia, ib] = [Number(a.priority), Number(b.priority), String(a.run_at), String(b.run_at), String(a.id), String(b.id)];
  if (pa !== pb) return pa - pb;
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (ia.length !== ib.length) return ia.length - ib.length;
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

/**
 * One attempt row of `insertAttempts`: job_id, attempt, worker, lease token, started_at (as read
 * under the row lock, exact to the µs), finished_at, the duration in whole ms between the two
 * ms-truncated times (so it equals `finishedAt - startedAt` of the Dates read back), outcome,
 * error code, message, stack, retry delay, wait (`waitMs`). All given: the duration as an
 * expression over the row's columns costs the server more than the insert itself.
 */
const ATTEMPT_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** An attempt's wait in whole ms between the ms-truncated due and start times (DATETIME(6) texts read under the row lock). */
export function waitMs(runAt: unknown, startedAt: unknown): number {
  return Math.max(0, parseUtc(startedAt).getTime() - parseUtc(runAt).getTime());
}

/** Statements of more than one aggregate. */
export function sharedSql(t: Tables) {
  return {
    jobById: `-- leasehold jobById: one job
      SELECT ${JOB_COLS} FROM ${t.jobs} WHERE id = ?`,
    /**
     * The history rows of n ended attempts, written once, as each attempt ends: by a finish
     * (also rescue and hand-back) for its landed leases, and by an admin cancel. A "simple
     * insert" (its row count known): InnoDB hands out the ids under a mutex, where an INSERT …
     * SELECT would hold the table's AUTO-INC lock to the statement's end.
     */
    insertAttempts: (n: number): string =>
      `-- leasehold insertAttempts: write the history rows of ${n} ended attempt(s)
      INSERT INTO ${t.attempts} (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms,
        outcome, error_code, error_message, error_stack, retry_delay_ms, wait_ms)
      VALUES ${Array<string>(n).fill(ATTEMPT_ROW).join(', ')}`,
  };
}

/** What the server can do, asked once per storage. */
export interface MysqlFeatures {
  /** INSERT … RETURNING: MariaDB */
  returning: boolean;
  /** @@auto_increment_increment: the id step within one multi-row INSERT */
  idStep: bigint;
}

export const FEATURES_SQL = `-- leasehold features: server version (MariaDB has INSERT … RETURNING) and the auto-increment step
  SELECT VERSION() AS version, @@auto_increment_increment AS step`;

export function featuresOf(row: Row | undefined): MysqlFeatures {
  return { returning: /mariadb/i.test(String(row?.version ?? '')), idStep: BigInt(String(row?.step ?? 1)) };
}

// ---- values in and out ---------------------------------------------------------------------

/** A JS Date as a DATETIME(6) literal in UTC (no dependence on the connection's timezone). */
export function utcLiteral(d: Date): string {
  return d.toISOString().slice(0, 23).replace('T', ' ');
}

export function utcLiteralOrNull(d: Date | null): string | null {
  return d === null ? null : utcLiteral(d);
}

/** A DATETIME(6) text ("2024-05-01 12:00:00.123456", UTC) as a Date (millisecond precision). */
export function parseUtc(v: unknown): Date {
  if (v instanceof Date) return v;
  const s = String(v);
  return new Date(`${s.slice(0, 10)}T${s.slice(11, 23) || '00:00:00'}Z`);
}

export function parseUtcOrNull(v: unknown): Date | null {
  return v === null || v === undefined ? null : parseUtc(v);
}

/** Milliseconds as whole microseconds for `INTERVAL ? MICROSECOND`. */
export function micros(ms: number): number {
  return Math.max(0, Math.round(ms * 1000));
}

/** A decimal id string as a BigInt parameter; null when it is not one. */
export function idParam(id: string): bigint | null {
  return /^\d{1,20}$/.test(id) ? BigInt(id) : null;
}

/** JSON in a text column: NULL stands for `undefined`. */
export function toJsonText(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v);
}

export function fromJsonText(v: unknown): unknown {
  return v === null || v === undefined ? undefined : JSON.parse(String(v));
}

/** DATETIME(6) comes back as UTC text, the payload as JSON text */
export const { toJobRow, toAttemptRow, toBatchRow } = rowMappers({ date: parseUtc, payload: (v) => JSON.parse(String(v)) });
