import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { WAKE_GAP_MS, WakeSubscribers } from './wake-gap.js';

describe('WakeSubscribers', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  function subscribed(): { subs: WakeSubscribers; woken: number[] } {
    const subs = new WakeSubscribers(() => Date.now());
    const woken: number[] = [];
    subs.add(() => woken.push(Date.now() - 1_000_000));
    return { subs, woken };
  }

  it('wakes at once, then coalesces what comes within the gap into one wake when it has passed', () => {
    const { subs, woken } = subscribed();
    subs.wake();
    assert.deepEqual(woken, [0]);
    mock.timers.tick(2);
    subs.wake();
    subs.wake();
    mock.timers.tick(WAKE_GAP_MS - 3);
    assert.deepEqual(woken, [0], 'nothing before the gap has passed');
    mock.timers.tick(1);
    assert.deepEqual(woken, [0, WAKE_GAP_MS], 'one trailing wake, exactly at the end of the gap');
    mock.timers.tick(WAKE_GAP_MS * 4);
    assert.deepEqual(woken, [0, WAKE_GAP_MS], 'and no more');
  });

  it('wakes at once again once a gap has passed since the last wake', () => {
    const { subs, woken } = subscribed();
    subs.wake();
    mock.timers.tick(WAKE_GAP_MS);
    subs.wake();
    assert.deepEqual(woken, [0, WAKE_GAP_MS]);
  });

  it('drops the trailing wake when the last subscriber leaves, and wakes no one without subscribers', () => {
    const subs = new WakeSubscribers(() => Date.now());
    const woken: number[] = [];
    const fn = () => woken.push(Date.now());
    subs.add(fn);
    subs.wake();
    subs.wake();
    subs.delete(fn);
    mock.timers.tick(WAKE_GAP_MS * 2);
    subs.wake();
    assert.equal(woken.length, 1);
  });

  it('still wakes the others when one subscriber throws', () => {
    const { subs, woken } = subscribed();
    subs.add(() => {
      throw new Error('boom');
    });
    const later: number[] = [];
    subs.add(() => later.push(1));
    subs.wake();
    assert.deepEqual([woken.length, later.length], [1, 1]);
  });
});
