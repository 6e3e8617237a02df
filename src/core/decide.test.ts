import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { AttemptResult } from './decide.js';
import { decideFinish, decideRescue, errorInfo } from './decide.js';
import { LeaseholdError, PermanentFailure } from './errors.js';
import type { RetryPolicy } from './retry.js';
import { jitterBand } from './retry.js';
import { canTransition } from './status.js';
import type { ExpiredLease } from './storage.js';

const POLICY: RetryPolicy = { kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 60_000 };
const rnd = () => 0.5;
const lease = (attempts: number, maxAttempts: number): ExpiredLease => ({
  id: '7',
  type: 'email',
  leaseToken: 'tok',
  lockedBy: 'worker-1',
  attempts,
  maxAttempts,
});

describe('decideFinish', () => {
  const table: { name: string; job: { attempts: number; maxAttempts: number }; result: AttemptResult; expect: Record<string, unknown> }[] = [
    { name: 'success', job: { attempts: 1, maxAttempts: 3 }, result: { kind: 'success' }, expect: { status: 'succeeded', attempt: { outcome: 'succeeded' } } },
    {
      name: 'error with attempts left → failed, retry after the policy delay',
      job: { attempts: 2, maxAttempts: 3 },
      result: { kind: 'error', error: new Error('nope') },
      expect: { status: 'failed', runAfterMs: 2000, outcome: 'failed', retryDelayMs: 2000, code: 'Error' },
    },
    {
      name: 'error on the last attempt → dead, no retry delay',
      job: { attempts: 3, maxAttempts: 3 },
      result: { kind: 'error', error: new Error('nope') },
      expect: { status: 'dead', runAfterMs: undefined, outcome: 'dead', retryDelayMs: null, code: 'Error' },
    },
    {
      name: 'permanent → dead even with attempts left',
      job: { attempts: 1, maxAttempts: 10 },
      result: { kind: 'permanent', error: { code: 'PERMANENT_FAILURE', message: 'bad input' } },
      expect: { status: 'dead', outcome: 'dead', code: 'PERMANENT_FAILURE' },
    },
    {
      name: 'snooze → queued later, attempt uncounted, even on the last attempt',
      job: { attempts: 3, maxAttempts: 3 },
      result: { kind: 'snooze', delayMs: 5000 },
      expect: { status: 'queued', runAfterMs: 5000, uncountAttempt: true, outcome: 'snoozed', retryDelayMs: 5000, error: undefined },
    },
    {
      name: 'cancel → cancelled with CANCELLED',
      job: { attempts: 1, maxAttempts: 3 },
      result: { kind: 'cancel', reason: 'customer left' },
      expect: { status: 'cancelled', outcome: 'cancelled', code: 'CANCELLED' },
    },
    // each time limit: failed while attempts are left, dead on the last, its outcome kept
    ...(
      [
        ['timeout', { kind: 'timeout', timeoutMs: 100 }, 'timed_out', 'TIMEOUT', 1000],
        ['max runtime', { kind: 'max_runtime', maxRuntimeMs: 100 }, 'max_runtime', 'MAX_RUNTIME', undefined],
      ] as const
    ).flatMap(([what, result, outcome, code, runAfterMs]) => [
      { name: `${what} with attempts left → failed (${outcome})`, job: { attempts: 1, maxAttempts: 3 }, result, expect: { status: 'failed' as const, outcome, code, ...(runAfterMs ? { runAfterMs } : {}) } },
      { name: `${what} on the last attempt → dead, outcome stays ${outcome}`, job: { attempts: 3, maxAttempts: 3 }, result, expect: { status: 'dead' as const, outcome, code } },
    ]),
    {
      name: 'shutdown → handed back, due now, attempt uncounted, no error',
      job: { attempts: 3, maxAttempts: 3 },
      result: { kind: 'shutdown' },
      expect: { status: 'queued', runAfterMs: 0, uncountAttempt: true, outcome: 'handed_back', error: undefined },
    },
  ];

  for (const row of table) {
    it(row.name, () => {
      const d = decideFinish(row.job, row.result, POLICY, rnd);
      const e = row.expect;
      assert.equal(d.status, e.status);
      assert.ok(canTransition('running', d.status), `running → ${d.status} is a legal move`);
      assert.equal(d.onlyIfExpired, undefined, 'only the sweeper guards on expiry');
      if ('attempt' in e) assert.deepEqual(d.attempt, e.attempt);
      if ('runAfterMs' in e) assert.equal(d.runAfterMs, e.runAfterMs);
      if ('uncountAttempt' in e) assert.equal(d.uncountAttempt, e.uncountAttempt);
      else assert.ok(!d.uncountAttempt);
      if ('outcome' in e) assert.equal(d.attempt.outcome, e.outcome);
      if ('retryDelayMs' in e) assert.equal(d.attempt.retryDelayMs, e.retryDelayMs);
      if ('code' in e) {
        assert.equal(d.error?.code, e.code);
        assert.equal(d.attempt.error?.code, e.code, 'the attempt row records the same error');
      }
      if ('error' in e) assert.equal(d.error, e.error);
    });
  }

  it('a failure is dead exactly when the attempts are spent (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempts, maxAttempts, r) => {
        const d = decideFinish({ attempts, maxAttempts }, { kind: 'error', error: new Error('x') }, POLICY, () => r);
        if (attempts >= maxAttempts) {
          assert.equal(d.status, 'dead');
          assert.equal(d.runAfterMs, undefined);
        } else {
          assert.equal(d.status, 'failed');
          const band = jitterBand(POLICY, attempts);
          assert.ok(d.runAfterMs! >= band.min && d.runAfterMs! <= band.max);
          assert.equal(d.attempt.retryDelayMs, d.runAfterMs);
        }
      }),
    );
  });
});

describe('decideRescue', () => {
  it('retry with attempts left → failed, guarded by onlyIfExpired, outcome lease_expired', () => {
    const d = decideRescue(lease(1, 3), 'retry', POLICY, rnd);
    assert.equal(d.status, 'failed');
    assert.equal(d.onlyIfExpired, true);
    assert.equal(d.runAfterMs, 1000);
    assert.equal(d.attempt.outcome, 'lease_expired');
    assert.equal(d.attempt.retryDelayMs, 1000);
    assert.equal(d.error?.code, 'LEASE_EXPIRED');
    assert.match(d.error!.message, /worker-1/);
    assert.ok(!d.uncountAttempt, 'an expired lease counts as an attempt');
  });

  it('retry with attempts spent → dead, still lease_expired and guarded', () => {
    const d = decideRescue(lease(3, 3), 'retry', POLICY, rnd);
    assert.equal(d.status, 'dead');
    assert.equal(d.onlyIfExpired, true);
    assert.equal(d.attempt.outcome, 'lease_expired');
    assert.equal(d.runAfterMs, undefined);
  });

  it("'fail' (non-idempotent work) → dead at once, even with attempts left", () => {
    const d = decideRescue({ ...lease(1, 10), lockedBy: null }, 'fail', POLICY, rnd);
    assert.equal(d.status, 'dead');
    assert.equal(d.onlyIfExpired, true);
    assert.equal(d.attempt.outcome, 'lease_expired');
    assert.equal(d.error?.code, 'LEASE_EXPIRED');
    assert.match(d.error!.message, /unknown worker/);
  });
});

describe('errorInfo', () => {
  it('keeps leasehold codes, string codes, else the error name', () => {
    assert.equal(errorInfo(new PermanentFailure('x')).code, 'PERMANENT_FAILURE');
    assert.equal(errorInfo(new LeaseholdError('TIMEOUT', 'slow')).code, 'TIMEOUT');
    assert.equal(errorInfo(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })).code, 'ECONNREFUSED');
    assert.equal(errorInfo(new TypeError('t')).code, 'TypeError');
    const info = errorInfo(new Error('m'));
    assert.equal(info.message, 'm');
    assert.match(info.stack ?? '', /Error: m/);
  });

  it('records non-errors, and truncates long messages and stacks', () => {
    assert.deepEqual(errorInfo('plain string'), { code: 'NON_ERROR_THROWN', message: 'plain string', stack: null });
    assert.equal(errorInfo({ a: 1 }).message, '{"a":1}');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    assert.equal(errorInfo(circular).code, 'NON_ERROR_THROWN');
    assert.equal(errorInfo(undefined).code, 'NON_ERROR_THROWN');
    const long = errorInfo(new Error('x'.repeat(10_000)));
    assert.ok(long.message.length < 2_100);
    assert.match(long.message, /more characters/);
    const e = new Error('s');
    e.stack = 'y'.repeat(20_000);
    assert.ok(errorInfo(e).stack!.length < 4_100);
  });
});
