/**
 * The storage contract's cluster-wide stores: locks, workers, queues, alert states and the
 * read-only diagnostics. Types only; re-exported from ./storage.ts, which holds the job stores.
 */
import type { AcquireLockParams, LockGrant, LockRow } from './schedules.js';
import type { JobCount } from './storage-jobs.js';
import type { AlertStateRow, AlertTransition, QueueHealth, QueueState, WorkerInfo, WorkerRow } from './storage-rows.js';
import type { PrunableQuery, StorageFacts } from './storage-diagnostics.js';
import type { JobSummary, JobSummaryQuery } from './search.js';
import type { DueCounts, DueCountsQuery } from './due-counts.js';

/** Distributed locks and semaphores (semantics in the header of ./schedules.ts). */
export interface LockStore {
  /** Take a free slot of the lock, or null when all its slots are held. */
  acquire(params: AcquireLockParams): Promise<LockGrant | null>;
  /** Push the holding's expiry to now + `ttlMs`; false when the token no longer holds it. */
  extend(params: { name: string; token: string; ttlMs: number }): Promise<boolean>;
  /** Free the holding; false when the token no longer held it. */
  release(params: { name: string; token: string }): Promise<boolean>;
  /** The holdings not yet expired (all, or one name's). */
  list(params?: { name?: string }): Promise<LockRow[]>;
}

/** Worker processes and their heartbeats. */
export interface WorkerStore {
  /** Record a started worker (or refresh it, by id). */
  register(params: WorkerInfo): Promise<void>;
  /** Mark the worker as heard from now. */
  heartbeat(params: { id: string }): Promise<void>;
  /** Forget a stopped worker. */
  remove(params: { id: string }): Promise<void>;
  /** Oldest registration first. */
  list(): Promise<WorkerRow[]>;
  /** Forget workers silent for longer than this; returns how many. */
  prune(params: { silentForMs: number }): Promise<number>;
}

/** What the queues hold. */
export interface QueueStore {
  /** Jobs by queue, type and status. */
  counts(): Promise<JobCount[]>;
  /** The overview's counts, bounded: each status exact up to `cap`, the exact ones by queue and type. */
  summary(params?: JobSummaryQuery): Promise<JobSummary>;
  /** Due jobs by queue, type and status over at most `limit` of them (./due-counts.ts); complete when fewer were due. */
  dueCounts(params?: DueCountsQuery): Promise<DueCounts>;
  /** Per queue holding due or running jobs: due, running, age of the oldest due job. */
  health(): Promise<QueueHealth[]>;
  /** Stop claims from this queue, cluster-wide (running jobs finish; enqueues go on). */
  pause(params: { queue: string }): Promise<QueueState>;
  /** Claims from this queue again; wakes listening workers where the database pushes wake-ups. */
  resume(params: { queue: string }): Promise<QueueState>;
  /** Every queue ever paused or resumed, by name. */
  states(): Promise<QueueState[]>;
}

/** Alert rules' state, moved by compare-and-set so one transition notifies once. */
export interface AlertStore {
  /** By rule name. */
  list(): Promise<AlertStateRow[]>;
  /** The row as moved (episode + 1, since = now), or null when another evaluator moved it first. */
  transition(params: AlertTransition): Promise<AlertStateRow | null>;
}

/** What `leasehold doctor` and `leasehold prune --dry-run` ask of the database; reads only. */
export interface DiagnosticsStore {
  /** Indexes present vs the migrations', table sizes, and the settings a guarantee depends on. */
  inspect(): Promise<StorageFacts>;
  /** How many jobs `jobs.prune` with these statuses and age would delete (no limit); deletes nothing. */
  prunable(params: PrunableQuery): Promise<number>;
}
