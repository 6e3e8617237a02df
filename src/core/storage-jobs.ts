/**
 * The job and attempt rows of the Storage contract, and the params and results of the job
 * lifecycle calls (insert, claim, heartbeat, finish, sweep). Types only; the semantics every
 * adapter must meet are in the header of ./storage.ts, which re-exports everything here.
 */
import type { QueueFlow, TypeFlow } from './flow.js';
import type { AttemptOutcome, JobStatus } from './status.js';

export interface JobRow {
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  status: JobStatus;
  /** lower runs first */
  priority: number;
  runAt: Date;
  /** attempts counted so far (a claim counts one; snooze and shutdown hand-back give it back) */
  attempts: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  lockedBy: string | null;
  leaseToken: string | null;
  lockedUntil: Date | null;
  heartbeatAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  lastErrorCode: string | null;
  lastError: string | null;
  /** inactivity timeout per attempt: no `ctx.heartbeat()` for this long aborts it */
  timeoutMs: number;
  /** hard bound on one attempt, heartbeats or not */
  maxRuntimeMs: number;
  createdAt: Date;
  updatedAt: Date;
  /** set on jobs a schedule enqueued: the schedule's name */
  scheduleName?: string;
  /** set on jobs a schedule enqueued: the slot (fire time) this job stands for */
  slotAt?: Date;
  /** W3C traceparent of the span that enqueued it, so its attempts link to that trace */
  traceContext?: string;
  /** the key its type's per-key limits count it under */
  concurrencyKey?: string;
  /** its unique key while queued, failed or running (see NewJob.unique) */
  uniqueKey?: string;
}

/** A job as the runtime wants it inserted. Validation happened before this point. */
export interface NewJob {
  queue: string;
  type: string;
  /** already JSON-serialisable and size-checked */
  payload: unknown;
  priority: number;
  /** absolute time chosen by the user; wins over `runAfterMs` */
  runAt?: Date | undefined;
  /** delay from the database's now; 0 = due now */
  runAfterMs: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  timeoutMs: number;
  maxRuntimeMs: number;
  /** W3C traceparent of the enqueuing span (absent: no recording span) */
  traceContext?: string | undefined;
  /** the key its type's per-key limits count it under */
  concurrencyKey?: string | null | undefined;
  /**
   * One job per key among queued, failed and running jobs. 'active': a second insert returns the
   * job that holds the key ('existing'). 'debounce': a waiting holder (queued or failed) gets
   * this payload and run_at ('replaced'); a running holder gives the key up to a new job.
   */
  unique?: { key: string; mode: UniqueMode } | null | undefined;
}

export type UniqueMode = 'active' | 'debounce';

/** What an insert did for one job: a new row, an existing one returned, or a waiting one replaced. */
export type InsertOutcome = 'created' | 'existing' | 'replaced';

export interface InsertResult {
  job: JobRow;
  /** false: a job with the same idempotency or unique key already existed and is returned (or replaced) instead */
  created: boolean;
  outcome: InsertOutcome;
}

export interface ClaimParams {
  workerId: string;
  /** only these types (the ones the worker has handlers for); never empty */
  types: readonly string[];
  /** only these queues; null = every queue */
  queues: readonly string[] | null;
  limit: number;
  leaseMs: number;
  /** limits of these types the claim enforces cluster-wide (types not listed have none) */
  flow?: Readonly<Record<string, TypeFlow>> | undefined;
  /** limits of these queues the claim enforces cluster-wide, over each queue's jobs of every type (queues not listed have none) */
  queueFlow?: Readonly<Record<string, QueueFlow>> | undefined;
}

/** A claimed job: `leaseToken` and `lockedUntil` are set, `attempts` already counts this one. */
export interface ClaimedJob extends JobRow {
  leaseToken: string;
  lockedUntil: Date;
}

export interface LeaseRef {
  id: string;
  leaseToken: string;
}

export interface HeartbeatParams {
  leases: readonly LeaseRef[];
  leaseMs: number;
}

export interface HeartbeatResult {
  /** leases that no longer hold, with the job's current status (null: the job is gone) */
  lost: { id: string; status: JobStatus | null }[];
}

export interface ErrorInfo {
  code: string;
  message: string;
  stack?: string | null;
}

/**
 * One fenced finish: lands only where `id` and `leaseToken` still match a running job.
 * Used for success, failure, death, snooze, cancel-by-handler, shutdown hand-back and
 * sweeper rescue alike.
 */
export interface FinishParams {
  id: string;
  leaseToken: string;
  status: Exclude<JobStatus, 'running'>;
  /** for `failed` / `queued`: run_at = db now + runAfterMs */
  runAfterMs?: number;
  /** give the claimed attempt back (snooze, shutdown hand-back): attempts = attempts - 1 */
  uncountAttempt?: boolean;
  /** sets last_error_code / last_error (null leaves them as they are) */
  error?: ErrorInfo | null;
  /** closes this attempt's history row */
  attempt: { outcome: AttemptOutcome; error?: ErrorInfo | null; retryDelayMs?: number | null };
  /** sweeper only: land only if the lease has expired (locked_until < now) */
  onlyIfExpired?: boolean;
}

export interface FinishResult {
  id: string;
  /** false: the lease was lost (or, with onlyIfExpired, had not expired); nothing was written */
  applied: boolean;
}

/** Which expired leases to list (leases.findExpired). */
export interface ExpiredLeaseQuery {
  limit: number;
  /** only jobs of these types (the sweeper's: those it has definitions for); all when omitted */
  types?: readonly string[] | undefined;
}

/** A running job whose lease has expired, as the sweeper sees it. */
export interface ExpiredLease {
  id: string;
  type: string;
  leaseToken: string;
  lockedBy: string | null;
  attempts: number;
  maxAttempts: number;
}

export interface AttemptRow {
  id: string;
  jobId: string;
  /** the job's attempt count when this attempt was claimed */
  attempt: number;
  workerId: string;
  leaseToken: string;
  startedAt: Date;
  finishedAt: Date | null;
  durationMs: number | null;
  outcome: AttemptOutcome;
  errorCode: string | null;
  errorMessage: string | null;
  errorStack: string | null;
  /** for retried attempts: how long until the next try */
  retryDelayMs: number | null;
  /** how long the job waited for this attempt: startedAt minus the job's runAt when it was claimed (whole ms, >= 0) */
  waitMs: number;
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

export interface PruneParams {
  /** finished (succeeded / dead / cancelled) longer ago than this */
  olderThanMs: number;
  statuses: readonly JobStatus[];
  limit: number;
}

/** Attempts that ended in a window, by their job's type and queue. */
export interface AttemptOutcomeCount {
  type: string;
  queue: string;
  outcome: AttemptOutcome;
  count: number;
}
