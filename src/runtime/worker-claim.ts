/**
 * How a worker's claim loop paces itself: how many jobs to claim now, how long to sleep
 * between claims, and the backoff while claims fail (logged once when they start failing and
 * once when they work again). The loop itself is Worker#claimLoop in worker.ts.
 */
import { Backoff } from '../core/backoff.js';
import { type RetryPolicy, bufferTarget, claimLimit } from '../core/index.js';
import type { Logger } from './env.js';

/** Claims pause while this many finished jobs wait for their outcome to be written. */
export const MAX_UNWRITTEN_FINISHES = 1_000;

export interface ClaimState {
  concurrency: number;
  /** the bufferSize option, or null for the automatic, time-based size */
  fixedBuffer: number | null;
  /** moving average of handler run time in ms (null until a job ran) */
  avgRunMs: number | null;
  /** attempts not yet done: running, or finished with their outcome still being written */
  running: number;
  /** handlers holding a concurrency slot */
  executing: number;
  buffered: number;
}

/** How many jobs to claim now (0: not yet). Finishes piling up unwritten hold claims back. */
export function claimBudget(s: ClaimState): number {
  if (s.running - s.executing >= MAX_UNWRITTEN_FINISHES) return 0;
  const target = bufferTarget(s.concurrency, s.fixedBuffer, s.avgRunMs);
  return claimLimit({ concurrency: s.concurrency, target, executing: s.executing, buffered: s.buffered });
}

/** Resolves on the next turn of the event loop (after pending I/O and timers). */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Busy: a job freeing its slot wakes the loop. Idle: the poll timer (with jitter) or a local enqueue. */
export function claimWaitMs(idle: boolean, pollMs: number, random: () => number): number {
  return idle ? pollMs * (0.9 + 0.2 * random()) : 60_000;
}

/** While claims fail: waits doubling from 250 ms up to 30 s. */
const CLAIM_BACKOFF: RetryPolicy = { kind: 'exponential', baseMs: 250, factor: 2, maxMs: 30_000, jitter: 'none' };

/** Paces the claim loop while claims fail, and says so once when they start and stop failing. */
export class ClaimBackoff {
  readonly #backoff = new Backoff(CLAIM_BACKOFF);

  constructor(private readonly log: Logger) {}

  /** A claim answered: the next one goes out without waiting. */
  succeeded(): void {
    if (this.#backoff.failures > 0) this.log.info({ event: 'claim.recovered' }, 'claims work again');
    this.#backoff.reset();
  }

  /** A claim failed with `e`: how long to wait before the next one. */
  failed(e: unknown): number {
    const first = this.#backoff.failures === 0;
    const ms = this.#backoff.next();
    if (first) this.log.error({ event: 'claim.failed', err: (e as Error).message, retryInMs: ms }, 'could not claim jobs; backing off');
    return ms;
  }
}
