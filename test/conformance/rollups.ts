/**
 * attempts.rollUp: counts at most `slots` closed slots ahead of a chart and says how many; a
 * slot is counted once (a second pass over a week finds fewer or none), and counting never
 * changes what a chart shows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHART_RANGES } from '../../src/core/charts.js';
import { ValidationError } from '../../src/core/errors.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, newJob, uniq, useDb } from './helpers.js';

export function rollUpTests(h: ConformanceHarness): void {
  describe('attempts.rollUp', () => {
    const db = useDb(h);

    it('counts at most the slots asked, each once, and the charts read the same', async () => {
      const s = db.storage;
      const t = uniq('roll');
      await s.jobs.insert({ jobs: [newJob(t), newJob(t)] });
      await finish(s, await claimOne(s, t));
      await finish(s, await claimOne(s, t), { status: 'dead', attempt: { outcome: 'dead' }, error: { code: 'E', message: 'x' } });
      const [day, week] = [await s.attempts.series(CHART_RANGES.day), await s.attempts.series(CHART_RANGES.week)];

      const first = await s.attempts.rollUp({ slots: 5 });
      assert.ok(first >= 0 && first <= 5, `at most five slots (${first})`);
      const week1 = (7 * 86_400_000) / (15 * 60_000);
      const rest = await s.attempts.rollUp({ slots: week1 });
      const again = await s.attempts.rollUp({ slots: week1 });
      // a slot may close between two calls: at most that one is left for the third
      assert.ok(again <= 1, `the week was counted: ${again} slot(s) left`);
      assert.ok(rest <= week1);
      const [day2, week2] = [await s.attempts.series(CHART_RANGES.day), await s.attempts.series(CHART_RANGES.week)];
      // the charts' windows may have moved on by a bucket between the reads: compare the counts only
      const total = (x: typeof day) => x.outcomes.reduce((n, o) => n + o.count, 0);
      assert.equal(total(day2), total(day));
      assert.equal(total(week2), total(week));
      assert.deepEqual(week2.failures.map((f) => [f.type, f.count]), week.failures.map((f) => [f.type, f.count]));
    });

    it('refuses a slot count that is not a whole number from 1 to a week of slots', async () => {
      for (const slots of [0, -1, 2.5, 673, Number.NaN]) await assert.rejects(db.storage.attempts.rollUp({ slots }), ValidationError, String(slots));
    });
  });
}
