/**
 * The database sampler's bounds, under a clock the test moves: a sample is reused until the
 * interval has passed; a process without the cluster's sampler lock asks for it again only
 * after a lock TTL; when the sampler closes, another process takes over at its next try.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DbSampler, MIN_SAMPLE_INTERVAL_MS } from '../../src/observe/db-sampler.js';
import { STORAGE_KINDS, describeEachKind, withHarness } from '../runtime/support.js';
import { countingSamples } from './support.js';

const INTERVAL = 10_000;
const TTL = 4 * INTERVAL;


await describeEachKind('database sampler', STORAGE_KINDS, (kind) => {
  test('reused within the interval, taken again after it; the other process waits a lock TTL, then takes over', () =>
    withHarness(kind, async (h) => {
      let now = 1_000_000;
      const clock = () => now;
      const a = countingSamples(h.storage);
      const b = countingSamples(await h.another());
      const first = new DbSampler(a.storage, { intervalMs: INTERVAL, clock, random: () => 0.5 });
      const second = new DbSampler(b.storage, { intervalMs: INTERVAL, clock, random: () => 0.5 });

      const s1 = await first.sample();
      assert.ok(s1, 'the first to ask holds the lock and samples');
      assert.equal(await second.sample(), null, 'the other does not sample');
      assert.equal(b.calls.health, 0);

      now += INTERVAL - 1;
      assert.equal(await first.sample(), s1, 'within the interval: the same sample');
      assert.equal(await second.sample(), null);
      assert.equal(a.calls.health, 1);
      assert.equal(b.calls.acquires, 1, 'the other asked for the lock once');

      now += 1;
      const s2 = await first.sample();
      assert.ok(s2 && s2 !== s1, 'the interval passed: a new sample');
      assert.equal(a.calls.health, 2);

      await first.close();
      assert.equal(await second.sample(), null, 'the other does not ask for the lock before its TTL');
      assert.equal(b.calls.acquires, 1);
      now += TTL * 1.2;
      assert.ok(await second.sample(), 'after a TTL the other asks, gets the lock and samples');
      assert.equal(b.calls.health, 1);
      assert.equal(b.calls.acquires, 2);
      assert.equal(second.sampling, true);
      await second.close();
    }));

  test('concurrent scrapes share one sample; an interval under the minimum is refused', () =>
    withHarness(kind, async (h) => {
      const { storage, calls } = countingSamples(h.storage);
      const sampler = new DbSampler(storage, { intervalMs: INTERVAL });
      const all = await Promise.all(Array.from({ length: 8 }, () => sampler.sample()));
      assert.equal(calls.health, 1);
      assert.ok(all.every((s) => s === all[0] && s !== null));
      await sampler.close();
      assert.throws(() => new DbSampler(storage, { intervalMs: MIN_SAMPLE_INTERVAL_MS - 1 }), /at least 5000 ms/);
    }));
});
