/**
 * Slot arithmetic under a fake clock: no duplicate and no gap across many ticks, misfire
 * policies after an outage, and the 'all' window and cap. Cron timings use intervals and explicit
 * irregular slot lists here (core is pure); DST cases are in src/runtime/cron-dst.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Misfire } from './schedules.js';
import type { NextAfter } from './slots.js';
import { intervalNextAfter, latestSlots, missedSlots, planSlots } from './slots.js';

const MIN = 60_000;
const T0 = Date.UTC(2030, 0, 1, 0, 0, 0);
const everyMinute = intervalNextAfter(MIN);
const skip: Misfire = { policy: 'skip', windowMs: null, max: 100 };
const latest: Misfire = { policy: 'latest', windowMs: null, max: 100 };
const all = (max = 100, windowMs: number | null = null): Misfire => ({ policy: 'all', windowMs, max });

/** Drive a schedule with a fake clock: ticks at `times`, applying each plan like schedules.fire would. */
function drive(misfire: Misfire, start: number, times: number[], graceMs = 3_000): number[] {
  let next: Date | null = new Date(start);
  const fired: number[] = [];
  for (const t of times) {
    if (next === null) break;
    const plan = planSlots(misfire, next, new Date(t), everyMinute, graceMs);
    if (!plan) continue;
    fired.push(...plan.fire.map((d) => d.getTime()));
    next = plan.nextRunAt;
  }
  return fired;
}

describe('slot math with a fake clock', () => {
  it('an every-minute schedule over an hour of jittery ticks fires 60 slots: no duplicate, no gap', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    const times: number[] = [];
    for (let t = T0; t < T0 + 60 * MIN; t += 800 + Math.floor(400 * random())) times.push(t);
    const fired = drive(skip, T0, times);
    assert.equal(fired.length, 60);
    assert.equal(new Set(fired).size, 60, 'no duplicate');
    assert.deepEqual(fired, Array.from({ length: 60 }, (_, i) => T0 + i * MIN), 'no gap, in order');
  });

  it('next_run_at comes from the slot, not from now: a late tick does not shift later slots', () => {
    const plan = planSlots(skip, new Date(T0), new Date(T0 + 2_500), everyMinute, 3_000);
    assert.deepEqual(plan?.fire.map((d) => d.getTime()), [T0]);
    assert.equal(plan?.nextRunAt?.getTime(), T0 + MIN);
    assert.equal(planSlots(skip, new Date(T0 + MIN), new Date(T0 + 30_000), everyMinute, 3_000), null, 'nothing due yet');
  });

  it('after a 10-slot outage: skip enqueues 0, latest 1, all 10', () => {
    // slots T0 … T0+9m were missed; now is 30 s after the last one (well past the 3 s grace)
    const now = new Date(T0 + 9 * MIN + 30_000);
    assert.deepEqual(missedSlots(skip, new Date(T0), now, everyMinute, 3_000), []);
    assert.deepEqual(missedSlots(latest, new Date(T0), now, everyMinute, 3_000).map((d) => d.getTime()), [T0 + 9 * MIN]);
    const a = missedSlots(all(), new Date(T0), now, everyMinute, 3_000).map((d) => d.getTime());
    assert.deepEqual(a, Array.from({ length: 10 }, (_, i) => T0 + i * MIN));
    // whatever the policy, next_run_at is the next future slot
    for (const m of [skip, latest, all()]) assert.equal(planSlots(m, new Date(T0), now, everyMinute, 3_000)?.nextRunAt?.getTime(), T0 + 10 * MIN);
  });

  it("'all' is bounded by its cap (the most recent slots) and by its window", () => {
    const now = new Date(T0 + 9 * MIN + 30_000);
    assert.deepEqual(missedSlots(all(4), new Date(T0), now, everyMinute, 3_000).map((d) => d.getTime()), [6, 7, 8, 9].map((i) => T0 + i * MIN));
    // a 5-minute window keeps slots no older than now - 5m: 5, 6, 7, 8, 9
    assert.deepEqual(missedSlots(all(100, 5 * MIN), new Date(T0), now, everyMinute, 3_000).map((d) => d.getTime()), [5, 6, 7, 8, 9].map((i) => T0 + i * MIN));
  });

  it('an on-time slot fires under every policy, even right after a long outage', () => {
    const now = new Date(T0 + 9 * MIN + 1_000);
    for (const m of [skip, latest]) assert.deepEqual(missedSlots(m, new Date(T0), now, everyMinute, 3_000).map((d) => d.getTime()), [T0 + 9 * MIN]);
    assert.equal(missedSlots(all(2), new Date(T0), now, everyMinute, 3_000).length, 2);
  });

  it('a year of downtime costs a bounded computation', () => {
    const everySecond = intervalNextAfter(1_000);
    const now = new Date(T0 + 365 * 86_400_000 + 700);
    const started = Date.now();
    assert.equal(missedSlots(latest, new Date(T0), now, everySecond, 500).length, 1);
    assert.equal(missedSlots(all(50), new Date(T0), now, everySecond, 500).length, 50);
    assert.ok(Date.now() - started < 1_000);
    assert.equal(latestSlots(3, T0, T0 + 10_500, everySecond).map((d) => d.getTime() - T0).join(), '8000,9000,10000');
  });

  it('property: irregular slots (as a cron across DST has) fire once each, from ticks closer than the grace or from a look-back after any outage', () => {
    /** nextAfter over an explicit ascending slot list: the first slot strictly after t. */
    const listed = (slots: number[]): NextAfter => (t) => {
      const s = slots.find((x) => x > t.getTime());
      return s === undefined ? null : new Date(s);
    };
    const fireAll = (misfire: Misfire, slots: number[], steps: number[], graceMs: number) => {
      const next = listed(slots);
      let at = next(new Date(T0 - 1));
      const fired: number[] = [];
      // tick until the first tick at or after the last slot
      for (let t = T0, i = 0; at !== null; t += steps[i++ % steps.length]!) {
        const plan = planSlots(misfire, at, new Date(t), next, graceMs);
        if (plan) fired.push(...plan.fire.map((d) => d.getTime()));
        if (plan) at = plan.nextRunAt;
        if (t >= slots.at(-1)!) break;
      }
      return fired;
    };
    const slotList = fc.array(fc.integer({ min: 1, max: 2 * 3_600_000 }), { minLength: 1, maxLength: 30 }).map((gaps) => {
      let t = T0;
      return gaps.map((g) => (t += g));
    });
    fc.assert(
      fc.property(slotList, fc.array(fc.integer({ min: 1, max: MIN - 1 }), { minLength: 1, maxLength: 20 }), (slots, steps) => {
        assert.deepEqual(fireAll(skip, slots, steps, MIN), slots);
      }),
      { numRuns: 100 },
    );
    fc.assert(
      fc.property(slotList, fc.array(fc.integer({ min: 1, max: 10 * 3_600_000 }), { minLength: 1, maxLength: 20 }), (slots, steps) => {
        assert.deepEqual(fireAll(all(1_000), slots, steps, MIN), slots);
      }),
      { numRuns: 100 },
    );
  });
});
