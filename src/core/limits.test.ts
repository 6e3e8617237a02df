/**
 * Every delay a user gives ends up added to the database's now: a snooze and a retry policy's
 * delays are bounded like an enqueue's delayMs, so no row gets a time outside 1970..9999.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from './errors.js';
import { EARLIEST_TIME_MS, LATEST_TIME_MS, MAX_DELAY_MS, checkDelay, checkTime } from './limits.js';
import { snooze } from './outcome.js';
import { validateRetryPolicy } from './retry.js';

function rejects(fn: () => unknown, what: string, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ValidationError, `${what}: a ValidationError, got ${String(e)}`);
    assert.equal(e.code, 'INVALID_OPTION', what);
    assert.match(e.message, message, what);
    return true;
  });
}

describe('limits', () => {
  it('the range is 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z; 100 years from any time a database can hold now stays inside', () => {
    assert.equal(new Date(EARLIEST_TIME_MS).toISOString(), '1970-01-01T00:00:00.000Z');
    assert.equal(new Date(LATEST_TIME_MS).toISOString(), '9999-12-31T23:59:59.999Z');
    assert.ok(Date.UTC(9899, 0, 1) + MAX_DELAY_MS < LATEST_TIME_MS);
    assert.ok(MAX_DELAY_MS * 1000 < Number.MAX_SAFE_INTEGER, 'in microseconds (MySQL intervals) too');
    assert.equal(checkTime('t', new Date(0)).getTime(), 0);
    assert.equal(checkDelay('d', 0), 0);
    for (const v of [-1, MAX_DELAY_MS + 1, Number.NaN, Infinity, '5']) rejects(() => checkDelay('d', v), `delay ${String(v)}`, /d must be a number of ms from 0 to/);
  });

  it('snooze(ms): from 0 to 100 years, a ValidationError otherwise', () => {
    assert.equal(snooze(MAX_DELAY_MS).kind, 'snooze');
    for (const ms of [-1, MAX_DELAY_MS + 1, 2 ** 53, Number.NaN]) rejects(() => snooze(ms), `snooze ${ms}`, /snooze delay/);
  });

  it('a retry policy’s delays are at most 100 years', () => {
    assert.doesNotThrow(() => validateRetryPolicy({ kind: 'fixed', delayMs: MAX_DELAY_MS }));
    assert.doesNotThrow(() => validateRetryPolicy({ kind: 'exponential', baseMs: 1000, maxMs: MAX_DELAY_MS }));
    rejects(() => validateRetryPolicy({ kind: 'fixed', delayMs: 2 ** 53 }), 'fixed', /delayMs/);
    rejects(() => validateRetryPolicy({ kind: 'exponential', baseMs: 1000, maxMs: 2 ** 53 }), 'exponential', /maxMs/);
  });
});
