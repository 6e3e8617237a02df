import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HISTOGRAM_EDGES_MS, OTHER_TYPES, binOf, binRange, chartOf, percentileOf, seriesStart } from './charts.js';

/** A histogram of these values. */
const bins = (...values: [number, number][]): Map<number, number> => {
  const m = new Map<number, number>();
  for (const [ms, n] of values) m.set(binOf(ms), (m.get(binOf(ms)) ?? 0) + n);
  return m;
};

describe('histogram bins', () => {
  it('edges ascend from 1 ms to a day; a value at an edge opens the next bin', () => {
    for (let i = 1; i < HISTOGRAM_EDGES_MS.length; i++) assert.ok(HISTOGRAM_EDGES_MS[i]! > HISTOGRAM_EDGES_MS[i - 1]!);
    assert.deepEqual(HISTOGRAM_EDGES_MS.slice(0, 8), [1, 2, 3, 5, 7, 10, 15, 20]);
    assert.equal(HISTOGRAM_EDGES_MS.at(-1), 86_400_000);
    assert.deepEqual([binOf(0), binOf(0.5), binOf(1), binOf(1.99), binOf(2), binOf(149), binOf(150)], [0, 0, 1, 1, 2, 12, 13]);
    assert.equal(binOf(86_400_000), HISTOGRAM_EDGES_MS.length);
    assert.deepEqual(binRange(0), { lo: 0, hi: 1 });
    assert.deepEqual(binRange(13), { lo: 150, hi: 200 });
    assert.deepEqual(binRange(HISTOGRAM_EDGES_MS.length), { lo: 86_400_000, hi: null });
  });
});

describe('percentileOf', () => {
  it('nearest rank, placed linearly inside its bin', () => {
    const h = bins([1, 10], [100, 80], [2000, 10]);
    assert.equal(percentileOf(h, 0.5), 125);
    assert.equal(percentileOf(h, 0.95), 2500);
    assert.equal(percentileOf(h, 0.99), 2900);
    assert.equal(percentileOf(h, 0.05), 1.5);
    assert.equal(percentileOf(bins([5, 10]), 0.5), 6);
  });

  it('the open last bin answers its lower edge; an empty histogram has none', () => {
    assert.equal(percentileOf(bins([1e9, 3]), 0.99), 86_400_000);
    assert.equal(percentileOf(new Map(), 0.5), null);
  });
});

describe('chartOf', () => {
  it('places the rows in their buckets, names the top failing types (ties by name) and sums the rest', () => {
    const from = new Date(seriesStart(Date.UTC(2030, 0, 1, 12, 0, 30), { bucketMs: 60_000, buckets: 3 }));
    assert.equal(from.toISOString(), '2030-01-01T11:58:00.000Z');
    const chart = chartOf({
      from, bucketMs: 60_000, buckets: 3,
      outcomes: [{ bucket: 0, outcome: 'succeeded', count: 4 }, { bucket: 2, outcome: 'failed', count: 3 }],
      failures: [{ bucket: 2, type: 'b', count: 2 }, { bucket: 2, type: 'a', count: 2 }, { bucket: 1, type: 'c', count: 1 }],
      runTime: [{ bucket: 0, bin: binOf(100), count: 4 }, { bucket: 2, bin: binOf(5), count: 3 }],
      wait: [],
    }, 2);
    assert.deepEqual(chart.failureTypes, ['a', 'b', OTHER_TYPES]);
    assert.deepEqual(chart.buckets.map((b) => [b.at.toISOString(), b.outcomes, b.failures]), [
      ['2030-01-01T11:58:00.000Z', { succeeded: 4 }, {}],
      ['2030-01-01T11:59:00.000Z', {}, { [OTHER_TYPES]: 1 }],
      ['2030-01-01T12:00:00.000Z', { failed: 3 }, { a: 2, b: 2 }],
    ]);
    assert.deepEqual(chart.buckets[0]!.runTime, { count: 4, p50: 125, p95: 150, p99: 150 });
    assert.deepEqual(chart.runTime.count, 7);
    assert.deepEqual(chart.wait, { count: 0, p50: null, p95: null, p99: null });
  });
});
