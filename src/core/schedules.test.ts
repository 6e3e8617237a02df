import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from './errors.js';
import { MAX_DELAY_MS } from './limits.js';
import { checkLockSlots, normalizeScheduleSpec, validateLockParams } from './schedules.js';

function rejects(fn: () => unknown, code: string, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ValidationError, `a ValidationError, got ${String(e)}`);
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
}

describe('normalizeScheduleSpec', () => {
  it('refuses an unknown time zone for interval schedules as for cron ones', () => {
    for (const timing of [{ everyMs: 60_000 }, { cron: '0 2 * * *' }]) {
      rejects(() => normalizeScheduleSpec({ name: 'x', type: 't', timezone: 'Mars/Olympus', ...timing }), 'INVALID_SCHEDULE', /unknown time zone "Mars\/Olympus"/);
      assert.equal(normalizeScheduleSpec({ name: 'x', type: 't', timezone: 'Europe/Warsaw', ...timing }).timezone, 'Europe/Warsaw');
    }
    assert.equal(normalizeScheduleSpec({ name: 'x', type: 't', everyMs: 60_000 }).timezone, 'UTC');
  });

  it('bounds the misfire window by the longest delay', () => {
    assert.equal(normalizeScheduleSpec({ name: 'x', type: 't', everyMs: 60_000, misfire: 'all', misfireWindowMs: MAX_DELAY_MS }).misfireWindowMs, MAX_DELAY_MS);
    rejects(() => normalizeScheduleSpec({ name: 'x', type: 't', everyMs: 60_000, misfire: 'all', misfireWindowMs: MAX_DELAY_MS + 1 }), 'INVALID_SCHEDULE', /misfire window/);
  });
});

describe('locks', () => {
  it('validateLockParams refuses an owner with NUL or an unpaired surrogate, or longer than 255', () => {
    assert.doesNotThrow(() => validateLockParams({ name: 'l', ttlMs: 1000, slots: 1, owner: 'host:42' }));
    for (const owner of ['', 'o\u0000', 'o\uD800', 'o'.repeat(256)]) {
      rejects(() => validateLockParams({ name: 'l', ttlMs: 1000, owner }), 'INVALID_OPTION', /owner/);
    }
  });

  it('checkLockSlots: another slot count is refused only while the semaphore is held', () => {
    assert.doesNotThrow(() => checkLockSlots('s', null, 5, 2), 'no count stored yet');
    assert.doesNotThrow(() => checkLockSlots('s', 3, 3, 3), 'the same count');
    assert.doesNotThrow(() => checkLockSlots('s', 3, 5, 0), 'nobody holds it: the new count is adopted');
    rejects(() => checkLockSlots('s', 3, 5, 1), 'INVALID_OPTION', /lock s is held as a semaphore of 3 slot\(s\); asked with slots: 5/);
    rejects(() => checkLockSlots('s', 3, 1, 3), 'INVALID_OPTION', /semaphore of 3/);
  });
});
