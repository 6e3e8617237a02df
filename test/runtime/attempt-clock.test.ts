/**
 * The attempts' shared timer: it fires by the earliest deadline watched, however late that
 * deadline was watched; it asks every attempt when it fires and is set again for the next
 * deadline still ahead (a deadline moved by progress); stop() cancels it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AttemptClock, type Timed } from '../../src/runtime/attempt-clock.js';
import { sleep, waitFor } from './support.js';

/** An attempt stand-in with one deadline; records when the clock found it reached. */
class Fake implements Timed {
  firedAt: number | null = null;
  asked = 0;
  constructor(public deadline: number) {}
  checkDeadlines(now: number): number {
    this.asked++;
    if (this.firedAt !== null) return Infinity;
    if (now >= this.deadline) {
      this.firedAt = now;
      return Infinity;
    }
    return this.deadline;
  }
}

describe('attempt clock', () => {
  test('an earlier deadline watched after a later one fires on time, then the later one', async () => {
    const t0 = Date.now();
    const late = new Fake(t0 + 400);
    const early = new Fake(t0 + 80);
    const all = [late];
    const clock = new AttemptClock(() => all);
    clock.watch(late.deadline);
    all.push(early);
    clock.watch(early.deadline);
    try {
      const earlyAt = await waitFor(() => early.firedAt, 2_000, 'the early deadline');
      assert.ok(earlyAt - t0 < 300, `early deadline found after ${earlyAt - t0} ms, due at 80`);
      assert.equal(late.firedAt, null, 'the later deadline is not reached yet');
      const lateAt = await waitFor(() => late.firedAt, 2_000, 'the later deadline');
      assert.ok(lateAt >= late.deadline);
    } finally {
      clock.stop();
    }
  });

  test('a later deadline watched does not postpone the timer', async () => {
    const t0 = Date.now();
    const first = new Fake(t0 + 60);
    const all = [first];
    const clock = new AttemptClock(() => all);
    clock.watch(first.deadline);
    for (let i = 1; i <= 50; i++) {
      const f = new Fake(t0 + 60 + i * 1_000);
      all.push(f);
      clock.watch(f.deadline);
    }
    try {
      const firstAt = await waitFor(() => first.firedAt, 2_000, 'the first deadline');
      assert.ok(firstAt - t0 < 300);
    } finally {
      clock.stop();
    }
  });

  test('a deadline moved later (progress) is checked again at its new time', async () => {
    const t0 = Date.now();
    const moving = new Fake(t0 + 50);
    const clock = new AttemptClock(() => [moving]);
    clock.watch(moving.deadline);
    moving.deadline = t0 + 250; // ctx.heartbeat() moved it; the clock is not told
    try {
      await sleep(150);
      assert.ok(moving.asked >= 1, 'the clock asked at the old deadline');
      assert.equal(moving.firedAt, null, 'not reached at the old deadline');
      const movedAt = await waitFor(() => moving.firedAt, 2_000, 'the moved deadline');
      assert.ok(movedAt >= t0 + 250);
    } finally {
      clock.stop();
    }
  });

  test('stop() cancels the timer', async () => {
    const f = new Fake(Date.now() + 30);
    const clock = new AttemptClock(() => [f]);
    clock.watch(f.deadline);
    clock.stop();
    await sleep(120);
    assert.equal(f.asked, 0);
  });
});
