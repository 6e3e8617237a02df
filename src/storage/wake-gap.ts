/**
 * Pushed wake-ups shared by the adapters that make their own (SQLite's file watch, MySQL's
 * parked connection): the subscribers, and their calls coalesced to one per WAKE_GAP_MS, the
 * first at once and one trailing call for what came after it. Every wake costs the worker a
 * claim: a busy database, or enqueues for other queues, cost at most 1000 / WAKE_GAP_MS claims
 * per second, not one per commit, and a wake is never later than WAKE_GAP_MS.
 */

/**
 * At most one wake per this many ms. Shorter than the gap between jobs of a steady trickle, so
 * the trailing wake that a worker's own finish fires (on SQLite) has passed when the next job
 * lands; and still many times the gap between a drain's commits, so a draining process's watch mostly rests.
 */
export const WAKE_GAP_MS = 10;

export class WakeSubscribers {
  private readonly fns = new Set<() => void>();
  private trailing: NodeJS.Timeout | null = null;
  private lastWakeAt = -Infinity;

  /** `now`: a monotonic clock in ms (tests pass a mocked one). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  get size(): number {
    return this.fns.size;
  }

  add(fn: () => void): void {
    this.fns.add(fn);
  }

  delete(fn: () => void): void {
    this.fns.delete(fn);
    if (this.fns.size === 0) this.clear();
  }

  /** Drop every subscriber, and a trailing wake still to come. */
  clear(): void {
    this.fns.clear();
    if (this.trailing) clearTimeout(this.trailing);
    this.trailing = null;
  }

  /** Something may have become due: wake now, or once WAKE_GAP_MS has passed since the last wake. */
  wake(): void {
    if (this.trailing || this.fns.size === 0) return;
    const wait = this.lastWakeAt + WAKE_GAP_MS - this.now();
    if (wait <= 0) return this.wakeAll();
    this.trailing = setTimeout(() => {
      this.trailing = null;
      this.wakeAll();
    }, wait);
    this.trailing.unref();
  }

  private wakeAll(): void {
    this.lastWakeAt = this.now();
    for (const fn of this.fns) {
      try {
        fn();
      } catch {
        // a subscriber's failure is its own; the others still wake
      }
    }
  }
}
