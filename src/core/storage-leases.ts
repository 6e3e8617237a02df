/**
 * The lease rows and calls of the Storage contract: claims, renewals, finishes and the expired
 * leases the sweeper rescues. Types only; the semantics are in the header of ./storage.ts, which
 * re-exports everything here.
 */
import type { QueueFlow, TypeFlow } from './flow.js';
import type { AttemptOutcome, JobStatus } from './status.js';
import type { JobRow } from './storage-jobs.js';

/** One claim (`leases.claim`): which jobs, how many, and the lease they get. */
export interface ClaimParams {
  /** the claiming worker */
  workerId: string;
  /** only these types (the ones the worker has handlers for); never empty */
  types: readonly string[];
  /** only these queues; null = every queue */
  queues: readonly string[] | null;
  /** at most this many jobs */
  limit: number;
  /** the lease length, in ms */
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

/** A held lease: the job and its fencing token. */
export interface LeaseRef {
  /** the job */
  id: string;
  /** the attempt's fencing token */
  leaseToken: string;
}

/** Renew several leases at once (`leases.heartbeat`). */
export interface HeartbeatParams {
  /** the leases to renew */
  leases: readonly LeaseRef[];
  /** the new lease length from now, in ms */
  leaseMs: number;
}

/** What a heartbeat renewed, and which leases it could not. */
export interface HeartbeatResult {
  /** leases that no longer hold, with the job's current status (null: the job is gone) */
  lost: {
    /** the job */
    id: string;
    /** its status now (null: gone) */
    status: JobStatus | null;
  }[];
}

/** An error as recorded on a job and its attempt. */
export interface ErrorInfo {
  /** its code (a LeaseholdError code or the thrown error's) */
  code: string;
  /** its message */
  message: string;
  /** its stack, when there was one */
  stack?: string | null;
}

/**
 * One fenced finish: lands only where `id` and `leaseToken` still match a running job.
 * Used for success, failure, death, snooze, cancel-by-handler, shutdown hand-back and
 * sweeper rescue alike.
 */
export interface FinishParams {
  /** the job */
  id: string;
  /** the attempt's fencing token */
  leaseToken: string;
  /** the status it moves to */
  status: Exclude<JobStatus, 'running'>;
  /** for `failed` / `queued`: run_at = db now + runAfterMs */
  runAfterMs?: number;
  /** give the claimed attempt back (snooze, shutdown hand-back): attempts = attempts - 1 */
  uncountAttempt?: boolean;
  /** sets last_error_code / last_error (null leaves them as they are) */
  error?: ErrorInfo | null;
  /** closes this attempt's history row */
  attempt: {
    /** how the attempt ended */
    outcome: AttemptOutcome;
    /** its error, when it failed */
    error?: ErrorInfo | null;
    /** for a retry: how long until the next try, in ms */
    retryDelayMs?: number | null;
  };
  /** sweeper only: land only if the lease has expired (locked_until < now) */
  onlyIfExpired?: boolean;
  /** `succeeded` only: the handler's return value as JSON text (core/results.ts checked it), stored by this write */
  result?: string | undefined;
}

/** What a finish wrote. */
export interface FinishResult {
  /** the job */
  id: string;
  /** false: the lease was lost (or, with onlyIfExpired, had not expired); nothing was written */
  applied: boolean;
}

/** Which expired leases to list (leases.findExpired). */
export interface ExpiredLeaseQuery {
  /** at most this many */
  limit: number;
  /** only jobs of these types (the sweeper's: those it has definitions for); all when omitted */
  types?: readonly string[] | undefined;
}

/** A running job whose lease has expired, as the sweeper sees it. */
export interface ExpiredLease {
  /** the job */
  id: string;
  /** its job type */
  type: string;
  /** the expired fencing token */
  leaseToken: string;
  /** the worker that held it */
  lockedBy: string | null;
  /** attempts counted so far */
  attempts: number;
  /** attempts allowed */
  maxAttempts: number;
}
