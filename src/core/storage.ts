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
 * - jobs.insert: one transaction. A duplicate idempotency key (against any existing row, or an
 *   earlier item of the same batch) returns that row with created=false, outcome 'existing',
 *   and inserts nothing. run_at = runAt ?? now + runAfterMs; status 'queued'; attempts 0.
 *   `unique` keys hold among queued, failed and running jobs only (unique_key): mode 'active'
 *   returns the holder ('existing'); 'debounce' sets a queued or failed holder's payload and
 *   run_at ('replaced', the row as updated) and takes the key from a running holder (its
 *   unique_key cleared) for a new job ('created'). Concurrent inserts of one key from several
 *   connections make one job.
 * - leases.claim: one atomic step. Due = status IN ('queued','failed') AND run_at <= now AND type
 *   IN types AND (queues null OR queue IN queues), ordered priority ASC, run_at ASC, id ASC.
 *   Each claimed row: status 'running', locked_by = workerId, lease_token = a fresh random token
 *   (>= 128 bits), locked_until = now + leaseMs, heartbeat_at = started_at = now,
 *   attempts + 1. Opens an attempt: attempts.list shows it (outcome 'running', attempt = new
 *   attempts, worker, token, started_at now) — as a row of its own, or (PostgreSQL, MySQL and
 *   SQLite, which write the attempt's row once, when it ends) read from the job row. Concurrent
 *   claimers never get the same row. Jobs of a paused queue (queues.pause) are never claimed.
 *   For a type in `flow` or a queue in `queueFlow`, the claim splits into core/flow-groups.ts's
 *   groups and takes of each only what core/flow.ts's `flowPlan` picks, reading and writing under
 *   the serialisation of every scope in the group (a job under both a type's and a queue's limits
 *   fits both), so concurrent claimers never exceed maxRunning, maxRunningPerKey or the rate's
 *   tokens (buckets stored by `scopeBucketName`); jobs it leaves are untouched. Unlimited and
 *   limited parts share the claim's `limit`.
 * - leases.heartbeat: rows matching id AND lease_token AND status 'running' get locked_until = now +
 *   leaseMs, heartbeat_at = now; every other lease is reported lost with the job's status.
 * - leases.findExpired: running jobs with locked_until < now, oldest locked_until first (then id),
 *   at most `limit`; when `types` is given only jobs of those types (an empty list: none), so
 *   a sweeper is never starved by expired leases of types it does not handle.
 * - leases.finish: each item lands only WHERE id AND lease_token match AND status = 'running'
 *   (AND locked_until < now when onlyIfExpired). It sets status; run_at = now + runAfterMs when
 *   given; attempts - 1 when uncountAttempt; last_error_code/last_error when error is given;
 *   clears locked_by, lease_token, locked_until; finished_at = now for succeeded/dead/cancelled
 *   (else null); and closes the attempt with the same (job_id, lease_token): finished_at,
 *   duration_ms (= finished_at - started_at in whole milliseconds), outcome, error fields,
 *   retry_delay_ms. (SQLite keeps a plain success's attempt in its job row instead: locked_by
 *   and lease_token stay there, and reads show them as null and the attempt as history.)
 * - jobs.retry: from queued/failed/dead/cancelled → queued, run_at = now, attempts = 0, lease and
 *   finished_at cleared. jobs.cancel: from queued/failed/running → cancelled, finished_at = now,
 *   lease cleared, last_error_code 'CANCELLED'; a running attempt closes as 'cancelled'.
 *   Both return the row as it is afterwards (null if no such job) and whether they applied.
 * - Operator events (./storage-events.ts): jobs.retry / jobs.cancel given an `actor` (checked by
 *   core/operator.ts, with `source`) write one job_events row ('retried' / 'cancelled', at = now,
 *   detail: the status and attempts before, the job's last attempt row id after the change's own
 *   writes, bulkId) in the same transaction as the change, only when it applied. jobs.events
 *   lists a job's events oldest first (id order), at most `limit` (default EVENTS_LIMIT).
 *   jobs.bulk is one transaction over the jobs with id in (afterId, throughId] (and in `ids`, when
 *   given) matching the filter (exact status, queue and type; any other part is refused, never
 *   ignored) and in a status the action may leave (core/operator.ts ACTION_STATUSES), lowest ids
 *   first, at most `limit`: each is changed exactly as jobs.retry / jobs.cancel would with the
 *   actor (its event carries bulkId), or deleted with its attempts and events ('delete': never a
 *   running job, never the effect ledger); status is read under the write's lock, so a job a
 *   claimer took meanwhile is judged as running. `next` is the last id taken when `limit` were
 *   taken, else throughId. jobs.bulkCount counts what jobs.bulk would take over a range, no limit.
 * - Every attempt row has wait_ms (waitMs): started_at minus the job's run_at when it was claimed.
 * - effects.reserve, one transaction: 'lost' unless the job is running under this lease_token;
 *   no row → insert (key, job_id, lease_token, 'pending') → 'reserved'; a 'done' row →
 *   'done' with its result; a 'pending' row under this token → 'reserved'; a 'pending' row
 *   under another token whose job no longer runs under it (an attempt that died) → take it over
 *   (job_id and lease_token become ours) → 'reserved'; a 'pending' row whose holder still runs
 *   under its lease (another live job using the same key) → 'busy', nothing written.
 *   effects.complete: fenced the same way; pending row under this token → 'done' with result.
 *   effects.reserveMany / completeMany (optional): the same for several effects with distinct
 *   keys in one write, each item's answer as if it had been asked alone, in input order. An
 *   adapter without them gets one call per effect from the runtime.
 * - Schedules and locks: the exact semantics are in the header of ./schedules.ts.
 * - queues.dueCounts: at most `limit` due jobs (an adapter's due index order), grouped by queue,
 *   type and status; complete only when fewer than `limit` were read.
 * - queues.health: per queue with due or running jobs; due = status IN ('queued','failed') AND
 *   run_at <= now. attempts.outcomes: ended attempts (finished_at >= now - sinceMs) joined to
 *   their job for type and queue (an attempt whose job was pruned is not counted).
 * - Finding jobs (./search.ts; pages and cursors decided once in storage/search-pages.ts): a
 *   JobFilter's exact parts (status; queue, type, idempotency key, each exact or a prefix of
 *   exactly those characters; id; schedule name) select candidates in id order from the cursor
 *   (jobs.search: newest first toward older, by id descending; afterId: ascending, returned newest
 *   first); a filter no index answers (core/search.ts readsByRange) reads only ids within
 *   readLimit of the cursor; `text` is a substring of last_error_code, last_error or the payload's
 *   JSON text with A-Z folded to a-z (every other character exact), tested on the first scanLimit
 *   candidates only; a page cut short by either bound says so (scanCapped) and where to go on.
 *   jobs.countMatching is exact up to cap; past it the planner's estimate (PostgreSQL, MySQL:
 *   estimated) or cap; a bounded read counts what it read (exact only when nothing was left). queues.summary counts each status up to cap (past it, as countMatching)
 *   and groups the statuses within their cap by queue and type, with due. attempts.series
 *   (./charts.ts): ended attempts by finished_at in `buckets` buckets of bucketMs aligned to
 *   multiples of bucketMs since the epoch, the last holding now: per outcome, failures
 *   (FAILURE_OUTCOMES) by job type, duration_ms and wait_ms in HISTOGRAM_EDGES_MS bins.
 * - alerts.transition: one guarded write; applies only when the rule's row has `episode` (or,
 *   for episode 0, no row exists): sets state, value, since = now, episode + 1.
 * - jobs.prune deletes jobs (and their attempts and events) whose status is listed and whose
 *   finished_at is older than now - olderThanMs, at most `limit`, oldest (finished_at, id) first
 *   and, given `after`, only those after it. jobs.pruneBatch is the same delete and also returns
 *   the last deleted key as the next batch's `after`. The effect ledger is never pruned with them.
 * - diagnostics.prunable counts what jobs.prune with the same statuses and olderThanMs would
 *   delete, without a limit, and deletes nothing (`leasehold prune --dry-run`, doctor).
 *   diagnostics.inspect reads facts only: the indexes the adapter's migrations create and
 *   whether each is there, table sizes (estimated where exact is slow), settings by name.
 *
 * @experimental the contract may change before 1.0 without a major version.
 */
import type { FireScheduleParams, FireScheduleResult, ScheduledJob, ScheduleRow, ScheduleUpsert } from './schedules.js';
import type { AttemptOutcomeCount, AttemptRow } from './storage-jobs.js';
import type { ClaimParams, ClaimedJob, ExpiredLease, ExpiredLeaseQuery, FinishParams, FinishResult, HeartbeatParams, HeartbeatResult } from './storage-leases.js';
import type { InsertResult, JobQuery, JobRow, NewJob, PruneBatch, PruneParams } from './storage-jobs.js';
import type { EffectParams, EffectRecord, EffectReservation, EffectRow, MigrateResult } from './storage-rows.js';
import type { JobSearch, JobSearchPage, MatchCount, MatchCountQuery } from './search.js';
import type { AttemptSeries, AttemptSeriesQuery } from './charts.js';
import type { BulkBatch, BulkBatchResult, BulkRange, JobEvent, OperatorChange } from './storage-events.js';
import type { AlertStore, DiagnosticsStore, LockStore, QueueStore, WorkerStore } from './storage-cluster.js';
import type { WorkflowReads, WorkflowStore } from './storage-workflows.js';

// the rows, params and results live in ./storage-jobs.ts and ./storage-rows.ts; re-exported
// here so the contract keeps one import path for adapters, runtime and users
export type * from './storage-jobs.js';
export type * from './storage-leases.js';
export type * from './storage-rows.js';
export type * from './storage-diagnostics.js';
// named, not `*`: search.ts and charts.ts hold functions too
export type { JobFilter, JobSearch, JobSearchPage, JobSummary, JobSummaryQuery, MatchCount, MatchCountQuery, StatusTotal } from './search.js';
export type { AttemptSeries, AttemptSeriesQuery, BucketCount } from './charts.js';
export type { DueCounts, DueCountsQuery } from './due-counts.js';
export type * from './storage-events.js';
export type * from './storage-cluster.js';
export type * from './storage-workflows.js';

/** What a storage can do; code branches on these, never on the dialect. */
export interface Capabilities {
  /** several processes may use the same database at once */
  readonly multiProcess: boolean;
  /** `jobs.insert({ tx })` and `leases.finish({ tx })` accept the caller's own transaction handle */
  readonly transactionalEnqueue: boolean;
  /** wake-ups are pushed (`subscribe`: NOTIFY on PostgreSQL, a file watch on SQLite, a parked connection on MySQL); otherwise workers only poll */
  readonly listenNotify: boolean;
}

/** The job rows: insert, read, and an operator's actions. */
export interface JobStore {
  /** Insert in one transaction; a duplicate idempotency key returns the existing row. */
  insert(params: { jobs: readonly NewJob[]; tx?: unknown }): Promise<InsertResult[]>;
  /** One job by id, or null. */
  get(params: { id: string }): Promise<JobRow | null>;
  /** A page of jobs matching the query. */
  list(params: JobQuery): Promise<JobRow[]>;
  /** One page of the jobs matching a filter, newest first, with the cursors of the pages either side. */
  search(params: JobSearch): Promise<JobSearchPage>;
  /** How many jobs match a filter: exact up to `cap`, then estimated or capped. */
  countMatching(params: MatchCountQuery): Promise<MatchCount>;
  /** Admin "retry now": queued/failed/dead/cancelled → queued, due now, attempts reset; recorded when an actor is given. */
  retry(params: OperatorChange): Promise<{
    /** the job after the change (null: no such job) */
    job: JobRow | null;
    /** false when its status did not allow it */
    applied: boolean;
  }>;
  /** Admin cancel: queued/failed/running → cancelled; a running job loses its lease; recorded when an actor is given. */
  cancel(params: OperatorChange): Promise<{
    /** the job after the change (null: no such job) */
    job: JobRow | null;
    /** false when its status did not allow it */
    applied: boolean;
  }>;
  /** Delete finished jobs (and their attempts and events) past retention; returns how many. */
  prune(params: PruneParams): Promise<number>;
  /** As prune, with where the batch stopped, for the next batch of a pass to start after it. */
  pruneBatch(params: PruneParams): Promise<PruneBatch>;
  /** A job's operator events, oldest first. */
  events(params: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]>;
  /** One batch of a bulk action, in one transaction: what it changed and where the next batch starts. */
  bulk(params: BulkBatch): Promise<BulkBatchResult>;
  /** How many jobs of the range jobs.bulk would take now (no limit; reads only). */
  bulkCount(params: BulkRange): Promise<number>;
}

/** Token-fenced leases on job rows: claim, heartbeat, finish, and the sweeper's query. */
export interface LeaseStore {
  /** Atomically lease up to `limit` due jobs and open an attempt for each (see above: its row, or the job row). */
  claim(params: ClaimParams): Promise<ClaimedJob[]>;
  /** Extend leases still held; report the rest. */
  heartbeat(params: HeartbeatParams): Promise<HeartbeatResult>;
  /** Fenced finishes, one transaction per call; results in input order. */
  finish(params: { items: readonly FinishParams[]; tx?: unknown }): Promise<FinishResult[]>;
  /** Running jobs whose lease expired, oldest first; only of `types` when given. */
  findExpired(params: ExpiredLeaseQuery): Promise<ExpiredLease[]>;
}

/** Every attempt's history row. */
export interface AttemptStore {
  /** Oldest first; a running attempt included. */
  list(params: { jobId: string }): Promise<AttemptRow[]>;
  /** Attempts that ended within the last `sinceMs`, counted by job type, queue and outcome. */
  outcomes(params: { sinceMs: number }): Promise<AttemptOutcomeCount[]>;
  /** Ended attempts counted per time bucket: by outcome, failures by type, run time and wait in histogram bins. */
  series(params: AttemptSeriesQuery): Promise<AttemptSeries>;
  /** Count up to `slots` closed slots of the week not counted yet, newest first, so a chart reads them counted; how many (0 where nothing is kept counted). */
  rollUp(params: { slots: number }): Promise<number>;
}

/** The effect ledger behind `ctx.once`. */
export interface EffectStore {
  /** Claim an effect's key for this attempt, or answer its recorded result when it was done before. */
  reserve(params: EffectParams): Promise<EffectReservation>;
  /** Mark done with its result; false when the lease (or the reservation) is gone. */
  complete(params: EffectRecord): Promise<boolean>;
  /** `reserve` for several effects at once (keys distinct, else it throws); answers in input order. */
  reserveMany?(params: { items: readonly EffectParams[] }): Promise<EffectReservation[]>;
  /** `complete` for several effects at once (keys distinct, else it throws); answers in input order. */
  completeMany?(params: { items: readonly EffectRecord[] }): Promise<boolean[]>;
  /** The effect recorded under exactly this key (the ledger holds one per key), or null. */
  get(params: { key: string }): Promise<EffectRow | null>;
  /** Newest first. */
  list(params: { jobId?: string; limit: number }): Promise<EffectRow[]>;
  /** How many effects the ledger holds. */
  count(): Promise<number>;
}

/** Recurring schedules (semantics in the header of ./schedules.ts). */
export interface ScheduleStore {
  /** Insert or change schedules by name in one transaction; returns them as stored. */
  upsert(params: { items: readonly ScheduleUpsert[] }): Promise<ScheduleRow[]>;
  /** Upsert the code-declared set and delete code-declared schedules not in it, in one transaction. */
  sync(params: { items: readonly ScheduleUpsert[] }): Promise<{
    /** the schedules as written */
    schedules: ScheduleRow[];
    /** names deleted */
    removed: string[];
  }>;
  /** One schedule by name, or null. */
  get(params: { name: string }): Promise<ScheduleRow | null>;
  /** By name. */
  list(): Promise<ScheduleRow[]>;
  /** True when a schedule was deleted. Its jobs stay. */
  remove(params: { name: string }): Promise<boolean>;
  /** Enable or disable; `nextRunAt` (when given) replaces next_run_at too. Null if no such schedule. */
  setEnabled(params: { name: string; enabled: boolean; nextRunAt?: Date | null }): Promise<ScheduleRow | null>;
  /** Enabled schedules with next_run_at <= now, oldest next_run_at first. */
  due(params: { limit: number }): Promise<ScheduleRow[]>;
  /** CAS on next_run_at + one job per slot under a unique (schedule, slot) key, in one transaction. */
  fire(params: FireScheduleParams): Promise<FireScheduleResult>;
  /** One job for the schedule now (slot_at = now), next_run_at untouched; null if no such schedule. */
  runNow(params: { name: string; job: ScheduledJob }): Promise<JobRow | null>;
}

/**
 * A database leasehold keeps its jobs in, from an adapter (`leasehold/sqlite`, `/postgres`,
 * `/mysql`, `/memory`) or `openStorage(url)`: one store per aggregate, each a few guarded writes.
 */
export interface Storage {
  /** for messages and logs only; code checks `capabilities`, never the dialect */
  readonly dialect: string;
  /** what this storage can do */
  readonly capabilities: Capabilities;
  /** the job rows */
  readonly jobs: JobStore;
  /** claims, renewals and finishes of running jobs */
  readonly leases: LeaseStore;
  /** each job's attempt history */
  readonly attempts: AttemptStore;
  /** the effect ledger behind `ctx.once` */
  readonly effects: EffectStore;
  /** cron and interval schedules */
  readonly schedules: ScheduleStore;
  /** distributed locks and semaphores */
  readonly locks: LockStore;
  /** worker processes and their heartbeats */
  readonly workers: WorkerStore;
  /** per-queue counts, health, pause and resume */
  readonly queues: QueueStore;
  /** alert rules' states */
  readonly alerts: AlertStore;
  /** read-only facts for `leasehold doctor` */
  readonly diagnostics: DiagnosticsStore;
  /** results, progress and dependencies between jobs (semantics in ./storage-workflows.ts) */
  readonly workflows: WorkflowStore & WorkflowReads;

  /** Apply pending migrations; safe when several processes call it at once. */
  migrate(): Promise<MigrateResult>;
  /** Highest applied migration version (0: none). */
  schemaVersion(): Promise<number>;
  /** The version this code's migrations bring the schema to: `schemaVersion()` once `migrate()` ran. */
  readonly expectedSchemaVersion: number;
  /** Close its connections; the storage is unusable after. */
  close(): Promise<void>;
  /** The database's clock. */
  now(): Promise<Date>;
  /**
   * Present when `capabilities.listenNotify`: calls `onWake` soon after jobs become due through
   * another connection or process (enqueue, retry), so idle workers need not wait for their
   * poll. A wake may be spurious (the claim decides). Reconnects by itself; polling stays the
   * backstop. Resolves to an unsubscribe.
   */
  subscribe?(params: { onWake: () => void }): Promise<() => Promise<void>>;
}
