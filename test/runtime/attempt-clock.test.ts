/**
 * The attempts' shared timer: it fires by the earliest deadline watched, however late that
 * deadline was watched; it asks every attempt when it fires and is set again for the next
 * deadline still ahead (a deadline moved by progress); stop() cancels it. On mocked timers and
 * Date, so no outcome depends on how late a real timer fires.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { AttemptClock, type Timed } from '../../src/runtime/attempt-clock.js';

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
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 }));
  afterEach(() => mock.timers.reset());

  test('an earlier deadline watched after a later one fires on time, then the later one', () => {
    const late = new Fake(400);
    const early = new Fake(80);
    const all = [late];
    const clock = new AttemptClock(() => all);
    clock.watch(late.deadline);
    all.push(early);
    clock.watch(early.deadline);
    mock.timers.tick(79);
    assert.equal(early.firedAt, null, 'not before its deadline');
    mock.timers.tick(1);
    assert.equal(early.firedAt, 80, 'the early deadline, at its time');
    assert.equal(late.firedAt, null, 'the later deadline is not reached yet');
    mock.timers.tick(320);
    assert.equal(late.firedAt, 400, 'then the later one, at its time');
    clock.stop();
  });

  test('a later deadline watched does not postpone the timer', () => {
    const first = new Fake(60);
    const all = [first];
    const clock = new AttemptClock(() => all);
    clock.watch(first.deadline);
    for (let i = 1; i <= 50; i++) {
      const f = new Fake(60 + i * 1_000);
      all.push(f);
      clock.watch(f.deadline);
    }
    mock.timers.tick(60);
    assert.equal(first.firedAt, 60);
    clock.stop();
  });

  test('a deadline moved later (progress) is checked again at its new time', () => {
    const moving = new Fake(50);
    const clock = new AttemptClock(() => [moving]);
    clock.watch(moving.deadline);
    moving.deadline = 250; // ctx.heartbeat() moved it; the clock is not told
    mock.timers.tick(50);
    assert.equal(moving.asked, 1, 'the clock asked at the old deadline');
    assert.equal(moving.firedAt, null, 'not reached at the old deadline');
    mock.timers.tick(199);
    assert.equal(moving.firedAt, null);
    mock.timers.tick(1);
    assert.equal(moving.firedAt, 250, 'reached at the moved deadline');
    clock.stop();
  });

  test('stop() cancels the timer', () => {
    const f = new Fake(30);
    const clock = new AttemptClock(() => [f]);
    clock.watch(f.deadline);
    clock.stop();
    mock.timers.tick(1_000);
    assert.equal(f.asked, 0);
  });
});
