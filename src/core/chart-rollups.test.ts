import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROLLUP_SLOT_MS, missingRuns, rolledUntil, slotsOf, withRollups } from './chart-rollups.js';

const S = ROLLUP_SLOT_MS;

describe('counted slots', () => {
  it('a window of whole slots reads the slots closed a minute ago or more; others read none', () => {
    const day = { bucketMs: S, buckets: 96 };
    assert.equal(rolledUntil(10 * S + 61_000, 0, day), 10 * S);
    assert.equal(rolledUntil(10 * S + 59_000, 0, day), 9 * S, 'the slot that just closed waits its minute');
    assert.equal(rolledUntil(10 * S, 0, { bucketMs: S, buckets: 3 }), 3 * S, 'never past the window');
    assert.equal(rolledUntil(10 * S, 0, { bucketMs: 60_000, buckets: 60 }), 0, 'minutes are not whole slots');
  });

  it('finds the runs of slots not counted yet', () => {
    const runs = missingRuns(0, 6 * S, new Set([S, 2 * S, 5 * S]));
    assert.deepEqual(runs, [[0, S], [3 * S, 5 * S]]);
    assert.deepEqual(slotsOf(runs), [0, 3 * S, 4 * S]);
    assert.deepEqual(missingRuns(0, 0, new Set()), []);
  });

  it('adds counted rows to the open part’s own counts', () => {
    const merged = withRollups(
      { from: new Date(0), bucketMs: S, buckets: 2, outcomes: [{ bucket: 1, outcome: 'succeeded', count: 2 }], failures: [], runTime: [{ bucket: 1, bin: 3, count: 2 }], wait: [] },
      [{ bucket: 1, kind: 'outcome', label: 'succeeded', n: 5 }, { bucket: 0, kind: 'failure', label: 'a', n: 1 }, { bucket: 1, kind: 'run', label: '3', n: 1 }, { bucket: 0, kind: 'wait', label: '0', n: 4 }, { bucket: 0, kind: 'slot', label: '', n: 0 }],
    );
    assert.deepEqual([merged.outcomes, merged.failures, merged.runTime, merged.wait], [
      [{ bucket: 1, outcome: 'succeeded', count: 7 }], [{ bucket: 0, type: 'a', count: 1 }], [{ bucket: 1, bin: 3, count: 3 }], [{ bucket: 0, bin: 0, count: 4 }],
    ]);
  });
});
