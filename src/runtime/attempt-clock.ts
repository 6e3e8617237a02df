/**
 * One timer for the time limits of all of a worker's attempts (inactivity timeout, max
 * runtime). A timer per attempt — made at start, cleared at the end — was a tenth of the
 * runtime's own cost per job, though it almost never fires. Here an attempt that starts only
 * compares its deadline with the one the timer is set for; attempts start in time order with
 * equal limits, so that is almost never earlier. When the timer fires it asks every attempt,
 * and is set again for the earliest deadline still ahead.
 */

/** An attempt as the clock sees it. */
export interface Timed {
  /** Abort the attempt if a limit is reached at `now`; returns its next deadline (Infinity: none left to watch). */
  checkDeadlines(now: number): number;
}

/** setTimeout's largest delay; a later deadline is reached by setting the timer again. */
const MAX_TIMER_MS = 2_147_483_647;

export class AttemptClock {
  #timer: NodeJS.Timeout | undefined;
  /** the deadline the timer is set for (Infinity: no timer) */
  #at = Infinity;

  constructor(private readonly attempts: () => Iterable<Timed>) {}

  /** Some attempt's deadline is `at` (Date.now() ms): make sure the timer fires by then. */
  watch(at: number): void {
    if (at < this.#at) this.#set(at);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }

  #set(at: number): void {
    clearTimeout(this.#timer);
    this.#at = at;
    // unref: the attempts' handlers and the worker's own loops keep the process alive, not this
    this.#timer = setTimeout(() => this.#fire(), Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now()))).unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#at = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const a of this.attempts()) next = Math.min(next, a.checkDeadlines(now));
    if (next < Infinity) this.#set(next);
  }
}
