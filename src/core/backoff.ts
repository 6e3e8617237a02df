/**
 * The one backoff every retry loop in leasehold uses: a `Backoff` for loops that pace themselves
 * (the claim loop, the listener's reconnect), and `retrying` for a call tried again on an error.
 * Delays come from a RetryPolicy (./retry.ts), so jitter and caps mean the same everywhere.
 * No I/O: the sleep is injected, defaulting to a plain timer.
 */
import { type RetryPolicy, retryDelay } from './retry.js';

export type Sleep = (ms: number) => Promise<void>;

// a held timer: a caller awaits the retry, and a process with nothing else to do must not exit before it
const sleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The delay after each consecutive failure; `reset()` once something works again. */
export class Backoff {
  #failures = 0;

  constructor(
    private readonly policy: RetryPolicy,
    private readonly random: () => number = Math.random,
  ) {}

  /** Failures since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** Record a failure; returns how long to wait before the next try. */
  next(): number {
    this.#failures += 1;
    return retryDelay(this.policy, this.#failures, this.random);
  }

  reset(): void {
    this.#failures = 0;
  }
}

export interface RetryingOptions {
  policy: RetryPolicy;
  /** tries in all, the first included */
  attempts: number;
  /** false: throw this error now (default: retry every error) */
  retryIf?: (error: unknown, attempt: number) => boolean;
  /** called before each wait, e.g. to log the first retry */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  random?: () => number;
  sleep?: Sleep;
}

/** Run `fn` until it resolves, waiting between tries; the last error is thrown as it is. */
export async function retrying<T>(fn: (attempt: number) => Promise<T>, opts: RetryingOptions): Promise<T> {
  const backoff = new Backoff(opts.policy, opts.random);
  const pause = opts.sleep ?? sleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (attempt >= opts.attempts || (opts.retryIf && !opts.retryIf(e, attempt))) throw e;
      const ms = backoff.next();
      opts.onRetry?.(e, attempt, ms);
      await pause(ms);
    }
  }
}
