/**
 * Every error a user may branch on. Each has a stable string `code`; messages are for people,
 * codes are for programs. Nothing here does I/O.
 */
export type ErrorCode =
  | 'INVALID_PAYLOAD'
  | 'PAYLOAD_TOO_LARGE'
  | 'PAYLOAD_SCHEMA'
  | 'UNKNOWN_JOB_TYPE'
  | 'INVALID_OPTION'
  | 'INVALID_URL'
  | 'JOB_NOT_FOUND'
  | 'INVALID_STATE'
  | 'LEASE_LOST'
  | 'TIMEOUT'
  | 'MAX_RUNTIME'
  | 'SHUTDOWN'
  | 'CANCELLED'
  | 'PERMANENT_FAILURE'
  | 'SCHEMA_TOO_NEW'
  | 'UNSUPPORTED_SERVER'
  | 'NOT_SUPPORTED'
  | 'TRANSIENT_STORAGE'
  | 'STORAGE'
  | 'HANDLER_ERROR'
  | 'EFFECT_BUSY'
  | 'INVALID_SCHEDULE'
  | 'SCHEDULE_NOT_FOUND'
  | 'LOCK_TIMEOUT'
  | 'LOCK_LOST'
  | 'INVALID_RESULT'
  | 'RESULT_TOO_LARGE'
  | 'INVALID_PROGRESS'
  | 'INVALID_FLOW';

/** The base of every error leasehold throws; tell them apart by `code` (or by class). */
export class LeaseholdError extends Error {
  /** a stable, machine-readable code, e.g. `INVALID_PAYLOAD` or `JOB_NOT_FOUND` */
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Input was rejected before anything was written. */
export class ValidationError extends LeaseholdError {}

/** The job type is not one this client or worker knows. */
export class UnknownJobTypeError extends ValidationError {
  /** @param jobType the type asked for */
  constructor(readonly jobType: string, known: readonly string[]) {
    super('UNKNOWN_JOB_TYPE', `unknown job type "${jobType}"; known types: ${known.join(', ') || '(none)'}`);
  }
}

/** No job has this id (it never existed, or retention deleted it). */
export class JobNotFoundError extends LeaseholdError {
  /** @param jobId the id asked for */
  constructor(readonly jobId: string) {
    super('JOB_NOT_FOUND', `job ${jobId} not found`);
  }
}

/** An admin operation was asked of a job in a state that does not allow it. */
export class InvalidStateError extends LeaseholdError {
  /**
   * @param jobId the job asked about
   * @param status its status when asked
   * @param why what besides its status refuses the change
   */
  constructor(readonly jobId: string, readonly status: string, action: string, why?: string) {
    super('INVALID_STATE', `cannot ${action} job ${jobId}: it is ${status}${why ? `, and ${why}` : ''}`);
  }
}

/** A fenced write changed nothing: another worker (or an operator) owns the job now. */
export class LeaseLostError extends LeaseholdError {
  /** @param jobId the job whose lease was lost */
  constructor(readonly jobId: string, what: string) {
    super('LEASE_LOST', `lease on job ${jobId} lost; ${what} rejected`);
  }
}

/**
 * Throw from a handler to fail the job permanently (straight to `dead`, no retries left
 * to spend). Anything else a handler throws is a retryable failure.
 */
export class PermanentFailure extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PERMANENT_FAILURE', message, options);
  }
}

/** The database reported a condition worth retrying (deadlock, busy, dropped connection). */
export class TransientStorageError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('TRANSIENT_STORAGE', message, options);
  }
}

/** The database was migrated by a newer leasehold than this one; upgrade before connecting. */
export class SchemaTooNewError extends LeaseholdError {
  constructor(found: number, known: number) {
    super('SCHEMA_TOO_NEW', `database schema is at version ${found}, this leasehold knows up to ${known}; upgrade leasehold`);
  }
}

/** The operation needs a feature this storage does not have. */
export class NotSupportedError extends LeaseholdError {
  constructor(what: string, dialect: string) {
    super('NOT_SUPPORTED', `${what} is not supported by the ${dialect} storage`);
  }
}

/** Why a handler's AbortSignal fired; `signal.reason` is one of these. */
export class AbortReason extends LeaseholdError {
  constructor(
    code: Extract<ErrorCode, 'TIMEOUT' | 'MAX_RUNTIME' | 'LEASE_LOST' | 'SHUTDOWN' | 'CANCELLED'>,
    message: string,
  ) {
    super(code, message);
  }
}

/** True when `e` is any error leasehold threw (a {@link LeaseholdError}). */
export function isLeaseholdError(e: unknown): e is LeaseholdError {
  return e instanceof LeaseholdError;
}
