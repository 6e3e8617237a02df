import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MAX_AUTO_BUFFER, bufferTarget, claimLimit, nextAvgRunMs } from './claim-size.js';

describe('bufferTarget', () => {
  it('a fixed bufferSize always wins', () => {
    assert.equal(bufferTarget(10, 3, 0.01), 3);
    assert.equal(bufferTarget(10, 0, null), 0);
  });

  it('before any job ran: one waiting job per slot', () => {
    assert.equal(bufferTarget(10, null, null), 10);
  });

  it('short jobs: about 25 ms of work, capped; long jobs: one per slot', () => {
    assert.equal(bufferTarget(10, null, 0.01), MAX_AUTO_BUFFER);
    assert.equal(bufferTarget(10, null, 1), 250);
    assert.equal(bufferTarget(10, null, 5), 50);
    assert.equal(bufferTarget(10, null, 1_000), 10);
  });

  it('always between concurrency and the cap, and never grows as jobs get slower (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.double({ min: 0, max: 1e6, noNaN: true }), fc.double({ min: 0, max: 1e6, noNaN: true }), (c, a, b) => {
        const [fast, slow] = a <= b ? [a, b] : [b, a];
        const t = bufferTarget(c, null, fast);
        assert.ok(t >= c && t <= Math.max(c, MAX_AUTO_BUFFER));
        assert.ok(bufferTarget(c, null, slow) <= t);
      }),
    );
  });
});

describe('nextAvgRunMs', () => {
  it('starts at the first sample, then moves a little toward each new one', () => {
    assert.equal(nextAvgRunMs(null, 40), 40);
    const next = nextAvgRunMs(40, 0);
    assert.ok(next < 40 && next > 35);
  });
});

describe('claimLimit', () => {
  it('an idle slot claims at once: every free slot plus the buffer', () => {
    assert.equal(claimLimit({ concurrency: 10, target: 10, executing: 0, buffered: 0 }), 20);
    assert.equal(claimLimit({ concurrency: 10, target: 500, executing: 9, buffered: 0 }), 501);
  });

  it('all slots busy: waits until the buffer is down to half its target, then refills it', () => {
    assert.equal(claimLimit({ concurrency: 10, target: 100, executing: 10, buffered: 51 }), 0);
    assert.equal(claimLimit({ concurrency: 10, target: 100, executing: 10, buffered: 50 }), 50);
  });

  it('never claims past slots + target (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 700 }), (c, target, executing, buffered) => {
        const n = claimLimit({ concurrency: c, target, executing: Math.min(executing, c), buffered });
        assert.ok(n >= 0 && Math.min(executing, c) + buffered + n <= Math.max(c + target, Math.min(executing, c) + buffered));
      }),
    );
  });
});
