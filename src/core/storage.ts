/**
 * The storage contract: what every adapter (memory, sqlite, postgres, mysql) implements.
 * Types only. Adapters perform decisions made elsewhere as single guarded, atomic writes and
 * report which rows changed; they never choose retry policy or the next state.
 *
 * Time: every "now" is the database's clock (SQLite and memory: the process clock). Callers
 * pass durations (`leaseMs`, `runAfterMs`), never absolute times computed on the app server,
 * except `runAt` chosen explicitly by a user.
 *
 * Exact semantics every adapter must meet (the conformance suite in test/conformance pins them):
 * - ids are decimal strings of an auto-incrementing integer; "newest first" sorts numerically.
 * - insertJobs: one transaction. A duplicate idempotency key (against any existing row, or an
 *   earlier item of the same batch) returns that row with created=false and inserts nothing.
 *   run_at = runAt ?? now + runAfterMs; status 'queued'; attempts 0.
 * - claimJobs: one atomic step. Due = status IN ('queued','failed') AND run_at <= now AND type
 *   IN types AND (queues null OR queue IN queues), ordered priority ASC, run_at ASC, id ASC.
 *   Each claimed row: status 'running', locked_by = workerId, lease_token = a fresh random token
 *   (>= 128 bits), locked_until = now + leaseMs, heartbeat_at = started_at = now,
 *   attempts + 1. Opens an attempt: listAttempts shows it (outcome 'running', attempt = new
 *   attempts, worker, token, started_at now) — as a row of its own, or (PostgreSQL, MySQL and
 *   SQLite, which write the attempt's row once, when it ends) read from the job row. Concurrent
 *   claimers never get the same row.
 * - heartbeat: rows matching id AND lease_token AND status 'running' get locked_until = now +
 *   leaseMs, heartbeat_at = now; every other lease is reported lost with the job's status.
 * - findExpiredLeases: running jobs with locked_until < now, oldest locked_until first (then id),
 *   at most `limit`; when `types` is given only jobs of those types (an empty list: none), so
 *   a sweeper is never starved by expired leases of types it does not handle.
 * - finishJobs: each item lands only WHERE id AND lease_token match AND status = 'running'
 *   (AND locked_until < now when onlyIfExpired). It sets status; run_at = now + runAfterMs when
 *   given; attempts - 1 when uncountAttempt; last_error_code/last_error when error is given;
 *   clears locked_by, lease_token, locked_until; finished_at = now for succeeded/dead/cancelled
 *   (else null); and closes the attempt with the same (job_id, lease_token): finished_at,
 *   duration_ms (= finished_at - started_at in whole milliseconds), outcome, error fields,
 *   retry_delay_ms.
 * - retryJob: from queued/failed/dead/cancelled → queued, run_at = now, attempts = 0, lease and
 *   finished_at cleared. cancelJob: from queued/failed/running → cancelled, finished_at = now,
 *   lease cleared, last_error_code 'CANCELLED'; a running attempt closes as 'cancelled'.
 *   Both return the row as it is afterwards (null if no such job) and whether they applied.
 * - reserveEffect, one transaction: 'lost' unless the job is running under this lease_token;
 *   no row → insert (key, job_id, lease_token, 'pending') → 'reserved'; a 'done' row →
 *   'done' with its result; a 'pending' row under this token → 'reserved'; a 'pending' row
 *   under another token whose job no longer runs under it (an attempt that died) → take it over
 *   (job_id and lease_token become ours) → 'reserved'; a 'pending' row whose holder still runs
 *   under its lease (another live job using the same key) → 'busy', nothing written.
 *   completeEffect: fenced the same way; pending row under this token → 'done' with result.
 *   reserveEffects / completeEffects (optional): the same for several effects with distinct
 *   keys in one write, each item's answer as if it had been asked alone, in input order. An
 *   adapter without them gets one call per effect from the runtime.
 * - Schedules and locks: the exact semantics are in the header of ./schedules.ts.
 * - pruneJobs deletes jobs (and their attempts) whose status is listed and whose finished_at is
 *   older than now - olderThanMs, at most `limit`. The effect ledger is never pruned with them.
 *
 * @experimental the contract may change before 1.0 without a major version.
 */
import type { AcquireLockParams, FireScheduleParams, FireScheduleResult, LockGrant, LockRow, ScheduledJob, ScheduleRow, ScheduleUpsert } from './schedules.js';
import type { JobStatus } from './status.js';
import type { AttemptRow, ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult } from './storage-jobs.js';
import type { InsertResult, JobRow, NewJob } from './storage-jobs.js';

// the job and attempt rows and the job lifecycle params/results live in ./storage-jobs.ts;
// re-exported here so the contract keeps one import path for adapters, runtime and users
export type { AttemptRow, ClaimParams, ClaimedJob, ErrorInfo, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult } from './storage-jobs.js';
export type { HeartbeatParams, HeartbeatResult, InsertResult, JobRow, LeaseRef, NewJob } from './storage-jobs.js';

export interface Capabilities {
  /** several processes may use the same database at once */
  readonly multiProcess: boolean;
  /** `insertJobs(…, { tx })` accepts the caller's own transaction handle */
  readonly transactionalEnqueue: boolean;
  /** wake-ups are pushed (LISTEN/NOTIFY); otherwise workers poll */
  readonly listenNotify: boolean;
}

export interface JobQuery {
  status?: JobStatus | undefined;
  queue?: string | undefined;
  type?: string | undefined;
  /** newest first; ids below this one (keyset pagination) */
  beforeId?: string | undefined;
  limit: number;
}

export interface JobCount {
  queue: string;
  type: string;
  status: JobStatus;
  count: number;
  /** for due statuses: how many have run_at <= now */
  due: number;
}

export type EffectReservation =
  /** never recorded (or left pending by a lease that no longer holds): run it now */
  | { state: 'reserved' }
  /** already done by some attempt: skip it, here is what it returned */
  | { state: 'done'; result: unknown }
  /** this attempt's lease no longer holds: do nothing */
  | { state: 'lost' }
  /** another live attempt holds the key right now: try again later (the runtime retries the job) */
  | { state: 'busy' };

export interface EffectParams {
  key: string;
  jobId: string;
  leaseToken: string;
}

/** A performed effect to record: its reservation and the result later attempts get back. */
export type EffectRecord = EffectParams & { result: unknown };

export interface EffectRow {
  key: string;
  jobId: string;
  state: 'pending' | 'done';
  result: unknown;
  createdAt: Date;
  doneAt: Date | null;
}

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  version: string;
  queues: readonly string[] | null;
  types: readonly string[];
}

export interface WorkerRow extends WorkerInfo {
  startedAt: Date;
  heartbeatAt: Date;
}

export interface MigrateResult {
  from: number;
  to: number;
  applied: { version: number; name: string }[];
}

export interface PruneParams {
  /** finished (succeeded / dead / cancelled) longer ago than this */
  olderThanMs: number;
  statuses: readonly JobStatus[];
  limit: number;
}

export interface Storage {
  /** for messages and logs only; code checks `capabilities`, never the dialect */
  readonly dialect: string;
  readonly capabilities: Capabilities;

  /** Apply pending migrations; safe when several processes call it at once. */
  migrate(): Promise<MigrateResult>;
  /** Highest applied migration version (0: none). */
  schemaVersion(): Promise<number>;
  close(): Promise<void>;
  /** The database's clock. */
  now(): Promise<Date>;

  // --- jobs -------------------------------------------------------------------------------
  /** Insert in one transaction; a duplicate idempotency key returns the existing row. */
  insertJobs(jobs: readonly NewJob[], opts?: { tx?: unknown }): Promise<InsertResult[]>;
  /** Atomically lease up to `limit` due jobs and open an attempt for each (see above: its row, or the job row). */
  claimJobs(params: ClaimParams): Promise<ClaimedJob[]>;
  /** Extend leases still held; report the rest. */
  heartbeat(params: HeartbeatParams): Promise<HeartbeatResult>;
  /** Fenced finishes, one transaction per call; results in input order. */
  finishJobs(params: readonly FinishParams[], opts?: { tx?: unknown }): Promise<FinishResult[]>;
  /** Running jobs whose lease expired, oldest first; only of `types` when given. */
  findExpiredLeases(params: ExpiredLeaseQuery): Promise<ExpiredLease[]>;
  getJob(id: string): Promise<JobRow | null>;
  listJobs(query: JobQuery): Promise<JobRow[]>;
  countJobs(): Promise<JobCount[]>;
  listAttempts(jobId: string): Promise<AttemptRow[]>;
  /** Admin "retry now": queued/failed/dead/cancelled → queued, due now, attempts reset. */
  retryJob(id: string): Promise<{ job: JobRow | null; applied: boolean }>;
  /** Admin cancel: queued/failed/running → cancelled; a running job loses its lease. */
  cancelJob(id: string): Promise<{ job: JobRow | null; applied: boolean }>;
  /** Delete finished jobs (and their attempts) past retention; returns how many. */
  pruneJobs(params: PruneParams): Promise<number>;

  // --- effect ledger (ctx.once) -----------------------------------------------------------
  reserveEffect(params: EffectParams): Promise<EffectReservation>;
  /** Mark done with its result; false when the lease (or the reservation) is gone. */
  completeEffect(params: EffectRecord): Promise<boolean>;
  /** reserveEffect for several effects at once (keys distinct, else it throws); answers in input order. */
  reserveEffects?(params: readonly EffectParams[]): Promise<EffectReservation[]>;
  /** completeEffect for several effects at once (keys distinct, else it throws); answers in input order. */
  completeEffects?(params: readonly EffectRecord[]): Promise<boolean[]>;
  /** The effect recorded under exactly this key (the ledger holds one per key), or null. */
  getEffect(key: string): Promise<EffectRow | null>;
  /** Newest first. */
  listEffects(params: { jobId?: string; limit: number }): Promise<EffectRow[]>;
  countEffects(): Promise<number>;

  // --- workers ------------------------------------------------------------------------------
  registerWorker(info: WorkerInfo): Promise<void>;
  heartbeatWorker(id: string): Promise<void>;
  removeWorker(id: string): Promise<void>;
  /** Oldest registration first. */
  listWorkers(): Promise<WorkerRow[]>;
  /** Forget workers silent for longer than this; returns how many. */
  pruneWorkers(params: { silentForMs: number }): Promise<number>;

  // --- schedules (semantics in the header) ---------------------------------------------------
  /** Insert or change schedules by name in one transaction; returns them as stored. */
  upsertSchedules(items: readonly ScheduleUpsert[]): Promise<ScheduleRow[]>;
  /** Upsert the code-declared set and delete code-declared schedules not in it, in one transaction. */
  syncSchedules(items: readonly ScheduleUpsert[]): Promise<{ schedules: ScheduleRow[]; removed: string[] }>;
  getSchedule(name: string): Promise<ScheduleRow | null>;
  /** By name. */
  listSchedules(): Promise<ScheduleRow[]>;
  /** True when a schedule was deleted. Its jobs stay. */
  removeSchedule(name: string): Promise<boolean>;
  /** Enable or disable; `nextRunAt` (when given) replaces next_run_at too. Null if no such schedule. */
  setScheduleEnabled(params: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null>;
  /** Enabled schedules with next_run_at <= now, oldest next_run_at first. */
  dueSchedules(params: { limit: number }): Promise<ScheduleRow[]>;
  /** CAS on next_run_at + one job per slot under a unique (schedule, slot) key, in one transaction. */
  fireSchedule(params: FireScheduleParams): Promise<FireScheduleResult>;
  /** One job for the schedule now (slot_at = now), next_run_at untouched; null if no such schedule. */
  runScheduleNow(params: { name: string; job: ScheduledJob }): Promise<JobRow | null>;

  // --- distributed locks and semaphores -------------------------------------------------------
  tryAcquireLock(params: AcquireLockParams): Promise<LockGrant | null>;
  extendLock(params: { name: string; token: string; ttlMs: number }): Promise<boolean>;
  releaseLock(params: { name: string; token: string }): Promise<boolean>;
  listLocks(params?: { name?: string }): Promise<LockRow[]>;

  /**
   * Present when `capabilities.listenNotify`: calls `onWake` soon after jobs become due through
   * another connection or process (enqueue, retry), so idle workers need not wait for their
   * poll. Reconnects by itself; polling stays the backstop. Resolves to an unsubscribe.
   */
  subscribe?(onWake: () => void): Promise<() => Promise<void>>;
}
