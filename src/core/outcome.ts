/**
 * What a handler can return instead of plain success. Outcomes are data (a tagged object),
 * not control-flow exceptions, so the worker's `switch` over them is exhaustive.
 * Throwing anything is a retryable failure, except `PermanentFailure` (→ dead now).
 */
import { checkDelay } from './limits.js';

const OUTCOME = Symbol.for('leasehold.outcome');

export type JobOutcome =
  | { readonly [OUTCOME]: true; readonly kind: 'snooze'; readonly delayMs: number }
  | { readonly [OUTCOME]: true; readonly kind: 'cancel'; readonly reason: string }
  | { readonly [OUTCOME]: true; readonly kind: 'fail'; readonly reason: string };

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

export function isJobOutcome(v: unknown): v is JobOutcome {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[OUTCOME] === true;
}
