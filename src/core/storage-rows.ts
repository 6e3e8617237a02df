/**
 * The effect ledger, worker and migration rows of the Storage contract. Types only; the
 * semantics are in the header of ./storage.ts, which re-exports everything here.
 */
/** What reserving an effect's key answered. */
export type EffectReservation =
  /** never recorded (or left pending by a lease that no longer holds): run it now */
  | {
      /** run it */
      state: 'reserved';
    }
  /** already done by some attempt: skip it, here is what it returned */
  | {
      /** skip it */
      state: 'done';
      /** what the earlier attempt recorded */
      result: unknown;
    }
  /** this attempt's lease no longer holds: do nothing */
  | {
      /** stop */
      state: 'lost';
    }
  /** another live attempt holds the key right now: try again later (the runtime retries the job) */
  | {
      /** try later */
      state: 'busy';
    };

/** Which effect, for which attempt. */
export interface EffectParams {
  /** the effect's key, unique per job */
  key: string;
  /** the job performing it */
  jobId: string;
  /** the attempt's fencing token */
  leaseToken: string;
}

/** A performed effect to record: its reservation and the result later attempts get back. */
export type EffectRecord = EffectParams & {
  /** what the effect returned (JSON) */
  result: unknown;
};

/** One effect in the ledger. */
export interface EffectRow {
  /** the effect's key */
  key: string;
  /** the job that performed it */
  jobId: string;
  /** `pending` while an attempt holds it, `done` once recorded */
  state: 'pending' | 'done';
  /** what it returned (JSON) */
  result: unknown;
  /** when it was first reserved */
  createdAt: Date;
  /** when it was recorded as done */
  doneAt: Date | null;
}

/** What a worker registers about itself. */
export interface WorkerInfo {
  /** the worker's id */
  id: string;
  /** its hostname */
  host: string;
  /** its process id */
  pid: number;
  /** the leasehold version it runs */
  version: string;
  /** the queues it takes from (null: all) */
  queues: readonly string[] | null;
  /** the job types it has handlers for */
  types: readonly string[];
}

/** A registered worker. */
export interface WorkerRow extends WorkerInfo {
  /** when it registered */
  startedAt: Date;
  /** when it was last heard from */
  heartbeatAt: Date;
}

/** What `migrate()` did. */
export interface MigrateResult {
  /** the schema version before */
  from: number;
  /** the schema version after */
  to: number;
  /** the migrations it applied, in order */
  applied: {
    /** its number */
    version: number;
    /** its label */
    name: string;
  }[];
}

/** Per queue, the numbers an operator alerts on. */
export interface QueueHealth {
  /** the queue */
  queue: string;
  /** queued or failed with run_at <= now */
  due: number;
  /** jobs running now */
  running: number;
  /** now - run_at of the oldest due job, in ms; null when nothing is due */
  oldestDueAgeMs: number | null;
}

/** An alert rule's persisted state: one row per rule name. */
export interface AlertStateRow {
  /** the rule's name */
  rule: string;
  /** whether it is firing */
  state: 'ok' | 'firing';
  /** +1 at each transition, so each notification has a key of its own */
  episode: number;
  /** when the current state began */
  since: Date;
  /** the measured value that moved it there */
  value: number | null;
  /** when the row last changed */
  updatedAt: Date;
}

/** Move a rule to `state`, only if its row is still at `episode` (0: no row yet). */
export interface AlertTransition {
  /** the rule's name */
  rule: string;
  /** the episode the row must still be at */
  episode: number;
  /** the state to move to */
  state: 'ok' | 'firing';
  /** the measured value behind the move */
  value: number | null;
}

/** A queue's cluster-wide state: a paused queue's jobs are not claimed. */
export interface QueueState {
  /** the queue */
  queue: string;
  /** whether claims from it are stopped */
  paused: boolean;
  /** when it was last paused (null: never) */
  pausedAt: Date | null;
  /** when it was last paused or resumed */
  updatedAt: Date;
}
