/**
 * Job states and the transitions between them, as data. Adapters never decide a transition;
 * they perform the one the runtime chose, guarded so it only lands on the state it expects.
 */
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'dead', 'cancelled', 'waiting'] as const;
/** Where a job is in its life: `queued`, `running`, `succeeded`, `failed` (waiting to retry), `dead`, `cancelled`, or `waiting` for the jobs of its workflow it depends on. */
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses a worker may claim from once `run_at` has passed. */
export const DUE_STATUSES: readonly JobStatus[] = ['queued', 'failed'];

/** Statuses nothing leaves on its own; only an operator's retry brings a job back. */
export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'dead', 'cancelled'];

/** Every legal move, keyed by the state it starts from. */
export const TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  // claimed by a worker; cancelled or retried early by an operator
  queued: ['running', 'cancelled', 'queued'],
  // finished, failed (will retry), dead (attempts spent or permanent), cancelled, or handed
  // back / snoozed / rescued to queued
  running: ['succeeded', 'failed', 'dead', 'cancelled', 'queued'],
  // a retry falls due and is claimed; an operator cancels or retries it now
  failed: ['running', 'cancelled', 'queued'],
  succeeded: [],
  // an operator's "retry now" revives dead and cancelled jobs
  dead: ['queued'],
  cancelled: ['queued'],
  // its last parent succeeded; a parent ended dead or cancelled under the 'cancel' policy
  waiting: ['queued', 'cancelled'],
};

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isJobStatus(s: string): s is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(s);
}

/** What happened to one attempt, as recorded in its history row. */
export const ATTEMPT_OUTCOMES = [
  'running',
  'succeeded',
  'failed',
  'dead',
  'timed_out',
  'max_runtime',
  'lease_expired',
  'lease_lost',
  'cancelled',
  'snoozed',
  'handed_back',
] as const;
/** How one attempt ended (`running` while it runs), as in {@link ATTEMPT_OUTCOMES}. */
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];
