/**
 * How many claimed-but-not-started jobs a worker keeps locally (its buffer), and when it
 * claims more. The buffer hides the claim's round trip: while one claim is in flight the
 * slots keep running buffered jobs. Claiming in larger batches costs fewer round trips per
 * job, but every buffered job is leased and waits, so the buffer is sized by *time*: about
 * BUFFER_WINDOW_MS of work at the observed run time. Short jobs get a large buffer (one claim
 * feeds many slots' worth of work), long jobs a buffer of `concurrency` (as before: one job
 * waiting per slot), never more than MAX_AUTO_BUFFER.
 */

/** How much work (ms of one slot's time, summed over the buffer) a worker keeps claimed ahead. */
export const BUFFER_WINDOW_MS = 25;
/** The automatic buffer never grows past this (a claim of this many rows is still quick). */
export const MAX_AUTO_BUFFER = 500;
/** Weight of the newest run time in the moving average. */
const EWMA_WEIGHT = 0.05;

/**
 * The buffer size to aim for. `fixed` is the user's bufferSize option (always wins);
 * `avgRunMs` the moving average of handler run time (null before any job ran).
 */
export function bufferTarget(concurrency: number, fixed: number | null, avgRunMs: number | null): number {
  if (fixed !== null) return fixed;
  if (avgRunMs === null) return concurrency;
  // jobs one slot runs in the window, times the slots: what the buffer must hold to last that long
  const perSlot = BUFFER_WINDOW_MS / Math.max(avgRunMs, 0.01);
  return Math.max(concurrency, Math.min(MAX_AUTO_BUFFER, Math.round(perSlot * concurrency)));
}

/** The next moving average of run time after one more job ran for `ms`. */
export function nextAvgRunMs(avg: number | null, ms: number): number {
  const x = Math.max(0, ms);
  return avg === null ? x : avg + EWMA_WEIGHT * (x - avg);
}

/**
 * Whether to claim now, and how many. Claims wait until the buffer is down to half its target
 * (or a slot is idle, which implies an empty buffer), then fill the buffer and every free slot.
 */
export function claimLimit(s: { concurrency: number; target: number; executing: number; buffered: number }): number {
  const room = s.concurrency + s.target - s.executing - s.buffered;
  if (room <= 0) return 0;
  const idleSlot = s.executing < s.concurrency;
  return idleSlot || s.buffered <= Math.floor(s.target / 2) ? room : 0;
}
