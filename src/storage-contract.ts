/**
 * `leasehold/storage`: the contract a storage adapter implements, for writing your own. The
 * `Storage` interface and every row and parameter it speaks in; the pure planning its claims
 * share (flow control); the checks every adapter makes the same way; the errors it throws.
 * What each method must do is written in the header of src/core/storage.ts, and the suite that
 * checks an adapter against it is test/conformance in the repository.
 *
 * An application needs none of this: it uses `openStorage` or an adapter's factory from the
 * root export.
 *
 * @packageDocumentation
 */
export type * from './core/storage.js';
export type {
  AcquireLockParams,
  FireScheduleParams,
  FireScheduleResult,
  LockGrant,
  LockRow,
  Misfire,
  MisfirePolicy,
  ScheduleRow,
  ScheduleSource,
  ScheduleSpec,
  ScheduleUpsert,
  ScheduledJob,
} from './core/schedules.js';
export { checkLockSlots } from './core/schedules.js';
export * from './core/flow.js';
export * from './core/flow-groups.js';
export { assertDistinctEffectKeys } from './core/effects.js';
export { declaredIndexes } from './core/schema-indexes.js';
export type { DeclaredIndex } from './core/schema-indexes.js';
export type { AttemptOutcome, JobStatus } from './core/status.js';
export { DUE_STATUSES, TERMINAL_STATUSES } from './core/status.js';
export type { RetryPolicy } from './core/retry.js';
export type { ErrorCode } from './core/errors.js';
export { LeaseholdError, NotSupportedError, SchemaTooNewError, TransientStorageError, ValidationError } from './core/errors.js';
