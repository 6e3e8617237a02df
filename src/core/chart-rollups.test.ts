import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHART_RANGES, seriesStart } from './charts.js';
import { ROLLUP_SLOT_MS, missingRuns, newestMissing, rolledUntil, slotsOf, warmWindow, withRollups } from './chart-rollups.js';

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

  it('a warm-up takes the newest slots not counted yet, at most its limit', () => {
    assert.deepEqual(newestMissing(0, 10 * S, new Set([9 * S, 7 * S]), 2), [[6 * S, 7 * S], [8 * S, 9 * S]]);
    assert.deepEqual(newestMissing(0, 10 * S, new Set([9 * S, 7 * S]), 4), [[4 * S, 7 * S], [8 * S, 9 * S]]);
    assert.deepEqual(newestMissing(2 * S, 4 * S, new Set(), 10), [[2 * S, 4 * S]], 'never before the window');
    assert.deepEqual(newestMissing(0, 3 * S, new Set([0, S, 2 * S]), 5), []);
  });

  it('the warm-up window holds every closed slot of the week chart', () => {
    const now = 1_700_000_123_456;
    const w = warmWindow(now);
    assert.equal(w.until, rolledUntil(now, now - 8 * 86_400_000, { bucketMs: S, buckets: 8 * 96 }), 'up to the last slot a chart reads counted');
    assert.ok(w.from <= seriesStart(now, CHART_RANGES.week) && w.from <= seriesStart(now, CHART_RANGES.day));
    assert.equal((w.until - w.from) % S, 0);
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
