import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Jitter, RetryPolicy } from './retry.js';
import { DEFAULT_RETRY_POLICY, jitterBand, nominalDelay, retryDelay, validateRetryPolicy } from './retry.js';

const jitterArb = fc.constantFrom<Jitter | undefined>(undefined, 'none', 'full', 'equal');

const exponentialArb = fc
  .record({
    baseMs: fc.integer({ min: 1, max: 100_000 }),
    extra: fc.integer({ min: 0, max: 10_000_000 }),
    factor: fc.option(fc.double({ min: 1, max: 10, noNaN: true }), { nil: undefined }),
    jitter: jitterArb,
  })
  .map(({ baseMs, extra, factor, jitter }): RetryPolicy => ({ kind: 'exponential', baseMs, maxMs: baseMs + extra, factor, jitter }));

const fixedArb = fc
  .record({ delayMs: fc.integer({ min: 0, max: 10_000_000 }), jitter: jitterArb })
  .map(({ delayMs, jitter }): RetryPolicy => ({ kind: 'fixed', delayMs, jitter }));

const policyArb = fc.oneof(exponentialArb, fixedArb);
const attemptArb = fc.integer({ min: 1, max: 10_000 });
/** random() contract is [0, 1); include the edges and a few out-of-contract values it clamps */
const randomArb = fc.oneof(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.constantFrom(0, 0.999999999, 1, -0.5, 2));

function maxOf(p: RetryPolicy): number {
  return p.kind === 'fixed' ? p.delayMs : p.maxMs;
}

describe('retryDelay (property)', () => {
  it('always lands in [0, maxMs] and inside jitterBand, as an integer', () => {
    fc.assert(
      fc.property(policyArb, attemptArb, randomArb, (policy, attempt, r) => {
        const d = retryDelay(policy, attempt, () => r);
        const { min, max } = jitterBand(policy, attempt);
        assert.ok(Number.isInteger(d), `integer delay, got ${d}`);
        assert.ok(d >= 0 && d <= maxOf(policy), `${d} within [0, ${maxOf(policy)}]`);
        assert.ok(d >= min && d <= max, `${d} within band [${min}, ${max}]`);
      }),
      { numRuns: 2000 },
    );
  });

  it('the band itself sits inside [0, nominal]', () => {
    fc.assert(
      fc.property(policyArb, attemptArb, (policy, attempt) => {
        const n = nominalDelay(policy, attempt);
        const { min, max } = jitterBand(policy, attempt);
        assert.ok(0 <= min && min <= max && max === n);
        if ((policy.jitter ?? 'none') === 'none') assert.equal(min, n);
      }),
    );
  });

  it('exponential nominal delays never decrease with the attempt and never pass maxMs', () => {
    fc.assert(
      fc.property(exponentialArb, attemptArb, fc.integer({ min: 0, max: 50 }), (policy, attempt, step) => {
        const a = nominalDelay(policy, attempt);
        const b = nominalDelay(policy, attempt + step);
        assert.ok(b >= a, `attempt ${attempt}: ${a}, attempt ${attempt + step}: ${b}`);
        assert.ok(b <= maxOf(policy));
        assert.ok(Number.isFinite(b));
      }),
      { numRuns: 2000 },
    );
  });

  it('is deterministic for a given random value, and monotone in it', () => {
    fc.assert(
      fc.property(policyArb, attemptArb, randomArb, randomArb, (policy, attempt, r1, r2) => {
        assert.equal(retryDelay(policy, attempt, () => r1), retryDelay(policy, attempt, () => r1));
        const [lo, hi] = r1 <= r2 ? [r1, r2] : [r2, r1];
        assert.ok(retryDelay(policy, attempt, () => lo) <= retryDelay(policy, attempt, () => hi));
      }),
    );
  });
});

describe('retry policy examples', () => {
  it('exponential: base, base·factor, … capped at maxMs', () => {
    const p: RetryPolicy = { kind: 'exponential', baseMs: 1000, factor: 2, maxMs: 10_000 };
    assert.deepEqual([1, 2, 3, 4, 5, 6, 100].map((a) => nominalDelay(p, a)), [1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
    assert.equal(nominalDelay({ kind: 'exponential', baseMs: 5, maxMs: 1e12 }, 1e9), 1e12, 'huge attempts do not overflow');
    assert.equal(nominalDelay(p, 0), 1000, 'attempt 0 is treated as the first');
  });

  it('fixed: the same delay every time', () => {
    assert.deepEqual([1, 5, 50].map((a) => nominalDelay({ kind: 'fixed', delayMs: 250 }, a)), [250, 250, 250]);
  });

  it('jitter bands: none, full, equal', () => {
    const base = { kind: 'fixed', delayMs: 1001 } as const;
    assert.deepEqual(jitterBand(base, 1), { min: 1001, max: 1001 });
    assert.deepEqual(jitterBand({ ...base, jitter: 'full' }, 1), { min: 0, max: 1001 });
    assert.deepEqual(jitterBand({ ...base, jitter: 'equal' }, 1), { min: 500, max: 1001 });
    assert.equal(retryDelay({ ...base, jitter: 'full' }, 1, () => 0), 0);
    assert.equal(retryDelay({ ...base, jitter: 'full' }, 1, () => 0.9999999), 1001);
  });

  it('the default policy is valid and starts at one second', () => {
    assert.equal(validateRetryPolicy(DEFAULT_RETRY_POLICY), DEFAULT_RETRY_POLICY);
    assert.equal(nominalDelay(DEFAULT_RETRY_POLICY, 1), 1000);
    assert.equal(nominalDelay(DEFAULT_RETRY_POLICY, 50), 3_600_000);
  });

  it('validateRetryPolicy rejects nonsense with INVALID_OPTION', () => {
    const bad: unknown[] = [
      { kind: 'fixed', delayMs: -1 },
      { kind: 'fixed', delayMs: Number.NaN },
      { kind: 'exponential', baseMs: 0, maxMs: 10 },
      { kind: 'exponential', baseMs: 100, maxMs: 10 },
      { kind: 'exponential', baseMs: 1, maxMs: 10, factor: 0.5 },
      { kind: 'exponential', baseMs: 1, maxMs: Infinity },
      { kind: 'linear', delayMs: 5 },
      { kind: 'fixed', delayMs: 5, jitter: 'some' },
    ];
    for (const p of bad) {
      assert.throws(() => validateRetryPolicy(p as RetryPolicy), { code: 'INVALID_OPTION' }, JSON.stringify(p));
    }
  });
});
