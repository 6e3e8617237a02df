/**
 * Slot arithmetic for schedules: given the schedule's next_run_at (the earliest slot not yet
 * fired), the database's now, and a `nextAfter(t)` function, decide which slots one tick enqueues
 * and what next_run_at becomes. Pure and clock-free, so tests drive it with a fake clock.
 *
 * The contract on nextAfter (src/runtime/cron.ts for cron, multiplication for intervals): for
 * EVERY instant t, not only for slots, it is the first slot strictly after t, or null when none is
 * left. The look-back below asks from arbitrary instants (`start − 1 ms`, now).
 *
 * Definitions. Due slots are the slots s with nextRunAt <= s <= now. A due slot is ON TIME while
 * now - s <= graceMs (a scheduler tick that is a little late is not an outage); older due slots
 * were MISSED. Every policy fires the on-time slots. Beyond that:
 * - skip: nothing (after an outage longer than the grace: 0 slots);
 * - latest: when no slot is on time, the newest missed one (after an outage: 1 slot);
 * - all: also every missed slot no older than windowMs, at most `max` of them, the most recent.
 * The new next_run_at is `nextAfter(newest due slot)`: computed from the slot, never from now.
 */
import type { Misfire } from './schedules.js';

/** The first slot strictly after `t`, for any instant `t` (null: none left). */
export type NextAfter = (t: Date) => Date | null;

export interface SlotPlan {
  /** slot times to enqueue, ascending */
  fire: Date[];
  /** the new next_run_at (null: no future slot) */
  nextRunAt: Date | null;
}

/** Upper bound of nextAfter calls for one plan: protects against a pathological expression. */
const MAX_STEPS = 1_000_000;

/**
 * The newest `k` slots s with lower <= s <= now, ascending. Looks back from now in growing
 * windows so a schedule that was down for a year costs a few dozen steps, not a year of slots.
 */
export function latestSlots(k: number, lower: number, now: number, nextAfter: NextAfter): Date[] {
  if (k <= 0 || lower > now) return [];
  let span = 1_000;
  let steps = 0;
  for (;;) {
    const start = Math.max(lower, now - span);
    const ring: Date[] = [];
    let s = nextAfter(new Date(start - 1));
    while (s !== null && s.getTime() <= now) {
      ring.push(s);
      if (ring.length > k) ring.shift();
      if (++steps > MAX_STEPS) throw new Error('schedule slot computation did not converge');
      const n = nextAfter(s);
      if (n !== null && n.getTime() <= s.getTime()) throw new Error('nextAfter must move forward');
      s = n;
    }
    if (ring.length >= k || start === lower) return ring;
    span *= 4;
  }
}

/** Most on-time slots one plan fires (a grace of minutes over a per-second schedule). */
const MAX_ON_TIME = 10_000;

/** What one tick fires for a schedule whose next_run_at is `nextRunAt`; null when nothing is due. */
export function planSlots(misfire: Misfire, nextRunAt: Date, now: Date, nextAfter: NextAfter, graceMs: number): SlotPlan | null {
  const lower = nextRunAt.getTime();
  const t = now.getTime();
  if (lower > t) return null;
  const [current] = latestSlots(1, lower, t, nextAfter);
  // nextRunAt was not itself a slot (the expression changed under it): move on from now
  if (current === undefined) return { fire: [], nextRunAt: nextAfter(now) };
  const onTime = latestSlots(MAX_ON_TIME, Math.max(lower, t - graceMs), t, nextAfter);
  let fire = onTime;
  if (misfire.policy === 'latest' && onTime.length === 0) fire = [current];
  if (misfire.policy === 'all') {
    const from = misfire.windowMs === null ? lower : Math.max(lower, t - misfire.windowMs);
    const missed = latestSlots(Math.max(1, misfire.max), from, t, nextAfter);
    const seen = new Set(missed.map((d) => d.getTime()));
    fire = [...missed, ...onTime.filter((d) => !seen.has(d.getTime()))].sort((a, b) => a.getTime() - b.getTime());
  }
  return { fire, nextRunAt: nextAfter(current) };
}

/** Alias in the words of the issue: the slots a tick enqueues after (possibly) missing some. */
export function missedSlots(misfire: Misfire, nextRunAt: Date, now: Date, nextAfter: NextAfter, graceMs: number): Date[] {
  return planSlots(misfire, nextRunAt, now, nextAfter, graceMs)?.fire ?? [];
}

/** Interval slots: multiples of `everyMs` since the Unix epoch. */
export function intervalNextAfter(everyMs: number): NextAfter {
  return (t) => new Date((Math.floor(t.getTime() / everyMs) + 1) * everyMs);
}

/**
 * Default grace for an on-time slot: half the schedule's period, at most 60 s, but never less than
 * three scheduler ticks (so ordinary tick jitter is never an outage). Later counts as a misfire.
 */
export function defaultGraceMs(periodMs: number, tickMs: number): number {
  return Math.max(3 * tickMs, Math.min(60_000, Math.floor(periodMs / 2)));
}
