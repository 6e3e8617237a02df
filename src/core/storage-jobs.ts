/**
 * The job and attempt rows of the Storage contract, and the params and results of the job
 * calls (insert, list, count, prune; claims and finishes are in ./storage-leases.ts). Types only; the semantics every
 * adapter must meet are in the header of ./storage.ts, which re-exports everything here.
 */
import type { AttemptOutcome, JobStatus } from './status.js';

/** A job as stored: its input, where it is in its life, and who holds it. */
export interface JobRow {
  /** decimal string of an increasing integer */
  id: string;
  /** the queue it waits in */
  queue: string;
  /** its job type (the handler that runs it) */
  type: string;
  /** its input, as parsed JSON */
  payload: unknown;
  /** where it is in its life */
  status: JobStatus;
  /** lower runs first */
  priority: number;
  /** when it is (or was) due */
  runAt: Date;
  /** attempts counted so far (a claim counts one; snooze and shutdown hand-back give it back) */
  attempts: number;
  /** attempts allowed before it goes dead */
  maxAttempts: number;
  /** the key an enqueue deduplicated on, if any */
  idempotencyKey: string | null;
  /** the worker holding its lease, while running */
  lockedBy: string | null;
  /** the running attempt's fencing token */
  leaseToken: string | null;
  /** when the lease expires unless renewed */
  lockedUntil: Date | null;
  /** the last renewal */
  heartbeatAt: Date | null;
  /** when the current or last attempt started */
  startedAt: Date | null;
  /** when it reached succeeded, dead or cancelled */
  finishedAt: Date | null;
  /** the last failed attempt's error code */
  lastErrorCode: string | null;
  /** the last failed attempt's message */
  lastError: string | null;
  /** inactivity timeout per attempt: no `ctx.heartbeat()` for this long aborts it */
  timeoutMs: number;
  /** hard bound on one attempt, heartbeats or not */
  maxRuntimeMs: number;
  /** when it was enqueued */
  createdAt: Date;
  /** when the row last changed */
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
  /** a succeeded job's result (its handler's return value, as parsed JSON); absent when none (undefined or null) */
  result?: NonNullable<unknown>;
  /** the last progress its handler reported (`ctx.progress`); absent when none */
  progress?: JobProgress;
  /** a workflow's job: how many of the jobs it waits for have not succeeded yet (absent: it waits for none) */
  pendingParents?: number;
  /** the batch it is a member of */
  batchId?: string;
}

/** A running (or ended) job's last reported progress. */
export interface JobProgress {
  /** the value, as parsed JSON */
  value: unknown;
  /** the note given with it, or null */
  note: string | null;
  /** when it was written (the database's clock) */
  at: Date;
}

/** A job as the runtime wants it inserted. Validation happened before this point. */
export interface NewJob {
  /** its queue */
  queue: string;
  /** its job type */
  type: string;
  /** already JSON-serialisable and size-checked */
  payload: unknown;
  /** lower runs first */
  priority: number;
  /** absolute time chosen by the user; wins over `runAfterMs` */
  runAt?: Date | undefined;
  /** delay from the database's now; 0 = due now */
  runAfterMs: number;
  /** attempts before dead */
  maxAttempts: number;
  /** deduplicates enqueues: a second insert with this key returns the first job */
  idempotencyKey: string | null;
  /** inactivity timeout per attempt, in ms */
  timeoutMs: number;
  /** hard bound on one attempt, in ms */
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
  unique?: {
    /** the key */
    key: string;
    /** what a second job with the key does */
    mode: UniqueMode;
  } | null | undefined;
}

/** How a unique key treats a new job while another holds it: `active` keeps the holder, `debounce` replaces a waiting one. */
export type UniqueMode = 'active' | 'debounce';

/** What an insert did for one job: a new row, an existing one returned, or a waiting one replaced. */
export type InsertOutcome = 'created' | 'existing' | 'replaced';

/** What `jobs.insert` answered for one job. */
export interface InsertResult {
  /** the job as stored (the existing one when the key matched) */
  job: JobRow;
  /** false: a job with the same idempotency or unique key already existed and is returned (or replaced) instead */
  created: boolean;
  /** what the insert did */
  outcome: InsertOutcome;
}

/**
 * A job store that can also write in the caller's synchronous transaction (SQLite: inside
 * better-sqlite3's `db.transaction(fn)`, where nothing can be awaited). `client.enqueueSync` needs it.
 */
export interface SyncJobInsert {
  /** As `jobs.insert({ jobs, tx })`, written before it returns; the jobs exist once the caller commits. */
  insertSync(params: { jobs: readonly NewJob[]; tx: unknown }): InsertResult[];
}

/** One attempt of a job, from claim to end. */
export interface AttemptRow {
  /** the attempt's own id */
  id: string;
  /** the job it ran */
  jobId: string;
  /** the job's attempt count when this attempt was claimed */
  attempt: number;
  /** the worker that ran it */
  workerId: string;
  /** its lease's fencing token */
  leaseToken: string;
  /** when it was claimed */
  startedAt: Date;
  /** when it ended (null while running) */
  finishedAt: Date | null;
  /** how long it ran */
  durationMs: number | null;
  /** how it ended */
  outcome: AttemptOutcome;
  /** its error's code, when it failed */
  errorCode: string | null;
  /** its error's message */
  errorMessage: string | null;
  /** its error's stack */
  errorStack: string | null;
  /** for retried attempts: how long until the next try */
  retryDelayMs: number | null;
  /** how long the job waited for this attempt: startedAt minus the job's runAt when it was claimed (whole ms, >= 0) */
  waitMs: number;
}

/** Which jobs `jobs.list` returns, newest first. */
export interface JobQuery {
  /** only this status */
  status?: JobStatus | undefined;
  /** only this queue */
  queue?: string | undefined;
  /** only this type */
  type?: string | undefined;
  /** newest first; ids below this one (keyset pagination) */
  beforeId?: string | undefined;
  /** at most this many */
  limit: number;
}

/** How many jobs one (queue, type, status) holds. */
export interface JobCount {
  /** the queue */
  queue: string;
  /** the job type */
  type: string;
  /** the status */
  status: JobStatus;
  /** how many */
  count: number;
  /** for due statuses: how many have run_at <= now */
  due: number;
}

/** Which finished jobs `jobs.prune` deletes. */
export interface PruneParams {
  /** finished (succeeded / dead / cancelled) longer ago than this */
  olderThanMs: number;
  /** only these (finished) statuses */
  statuses: readonly JobStatus[];
  /** at most this many in one call */
  limit: number;
  /** only jobs after this key: where the pass's previous batch stopped (null or absent: from the oldest) */
  after?: PruneCursor | null | undefined;
}

/**
 * Where a prune batch stopped: the (finished_at, id) of the last job it deleted, never later than
 * that. The next batch of the pass starts after it, so it does not step again over what was deleted.
 */
export interface PruneCursor {
  /** finished_at of the last deleted job, to the millisecond and never rounded up */
  finishedAt: Date;
  /** its id */
  id: string;
}

/** What one prune batch did. */
export interface PruneBatch {
  /** how many jobs it deleted */
  deleted: number;
  /** where the next batch of the pass starts (the `after` it was given when it deleted nothing) */
  cursor: PruneCursor | null;
}

/** Attempts that ended in a window, by their job's type and queue. */
export interface AttemptOutcomeCount {
  /** the job type */
  type: string;
  /** the queue */
  queue: string;
  /** how the attempts ended */
  outcome: AttemptOutcome;
  /** how many */
  count: number;
}
