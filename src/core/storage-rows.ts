/**
 * The effect ledger, worker and migration rows of the Storage contract. Types only; the
 * semantics are in the header of ./storage.ts, which re-exports everything here.
 */
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

/** Per queue, the numbers an operator alerts on. */
export interface QueueHealth {
  queue: string;
  /** queued or failed with run_at <= now */
  due: number;
  running: number;
  /** now - run_at of the oldest due job, in ms; null when nothing is due */
  oldestDueAgeMs: number | null;
}

/** An alert rule's persisted state: one row per rule name. */
export interface AlertStateRow {
  rule: string;
  state: 'ok' | 'firing';
  /** +1 at each transition, so each notification has a key of its own */
  episode: number;
  /** when the current state began */
  since: Date;
  /** the measured value that moved it there */
  value: number | null;
  updatedAt: Date;
}

/** Move a rule to `state`, only if its row is still at `episode` (0: no row yet). */
export interface AlertTransition {
  rule: string;
  episode: number;
  state: 'ok' | 'firing';
  value: number | null;
}

/** A queue's cluster-wide state: a paused queue's jobs are not claimed. */
export interface QueueState {
  queue: string;
  paused: boolean;
  /** when it was last paused (null: never) */
  pausedAt: Date | null;
  updatedAt: Date;
}
