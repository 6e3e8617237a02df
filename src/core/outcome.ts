/**
 * What a handler can return instead of plain success. Outcomes are data (a tagged object),
 * not control-flow exceptions, so the worker's `switch` over them is exhaustive.
 * Throwing anything is a retryable failure, except `PermanentFailure` (→ dead now).
 */
import { checkDelay } from './limits.js';

const OUTCOME = Symbol.for('leasehold.outcome');

/** What {@link snooze}, {@link cancel} and {@link fail} return; a handler returns it to end its attempt that way. */
export type JobOutcome =
  | {
      /** marks the object as an outcome */
      readonly [OUTCOME]: true;
      /** run again later */
      readonly kind: 'snooze';
      /** how long until it runs again, in ms */
      readonly delayMs: number;
    }
  | {
      /** marks the object as an outcome */
      readonly [OUTCOME]: true;
      /** stop for good as `cancelled` */
      readonly kind: 'cancel';
      /** why, recorded on the job */
      readonly reason: string;
    }
  | {
      /** marks the object as an outcome */
      readonly [OUTCOME]: true;
      /** stop for good as `dead` */
      readonly kind: 'fail';
      /** why, recorded on the job */
      readonly reason: string;
    };

/** Run again after `delayMs` (0 to 100 years); the attempt is not counted as a failure. */
export function snooze(delayMs: number): JobOutcome {
  checkDelay('snooze delay', delayMs);
  return { [OUTCOME]: true, kind: 'snooze', delayMs };
}

/** Stop for good without counting as a failure (status `cancelled`). */
export function cancel(reason: string): JobOutcome {
  return { [OUTCOME]: true, kind: 'cancel', reason };
}

/** Fail permanently: straight to `dead`, retries or not. */
export function fail(reason: string): JobOutcome {
  return { [OUTCOME]: true, kind: 'fail', reason };
}

/** True when `v` is a {@link JobOutcome} (from snooze, cancel or fail). */
export function isJobOutcome(v: unknown): v is JobOutcome {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[OUTCOME] === true;
}
