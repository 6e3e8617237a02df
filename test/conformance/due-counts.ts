/**
 * queues.dueCounts: due jobs (queued or failed, run_at passed) by queue, type and status, read
 * up to a limit; complete only when fewer than the limit were read. Jobs not yet due, running
 * or finished are never counted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { JobCount } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, insertN, newJob, uniq, useDb } from './helpers.js';

const byKey = (a: JobCount, b: JobCount): number => `${a.queue}/${a.type}/${a.status}`.localeCompare(`${b.queue}/${b.type}/${b.status}`);

export function dueCountTests(h: ConformanceHarness): void {
  describe('queues.dueCounts', () => {
    const db = useDb(h);

    it('groups the due jobs by queue, type and status; complete when the limit was not reached', async () => {
      const s = db.storage;
      const [a, b] = [uniq('due'), uniq('due')];
      await insertN(s, a, 3);
      await s.jobs.insert({ jobs: [newJob(a, { runAfterMs: 60_000 })] });
      await finish(s, await claimOne(s, a));
      await claimOne(s, a);
      await insertN(s, b, 3, { queue: 'other' });
      const [b1, b2] = [await claimOne(s, b), await claimOne(s, b)];
      await finish(s, b1, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } });
      await finish(s, b2, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });

      const expected: JobCount[] = [
        { queue: 'default', type: a, status: 'queued', count: 1, due: 1 },
        { queue: 'other', type: b, status: 'failed', count: 1, due: 1 },
        { queue: 'other', type: b, status: 'queued', count: 1, due: 1 },
      ];
      const all = await s.queues.dueCounts();
      assert.deepEqual([...all.counts].sort(byKey), expected);
      assert.equal(all.complete, true);
      assert.deepEqual(await s.queues.dueCounts({ limit: 4 }), { counts: all.counts, complete: true }, 'three due, limit four: all read');
    });

    it('reads at most the limit; reaching it says more may be due', async () => {
      const s = db.storage;
      const before = await s.queues.dueCounts();
      const c = uniq('due');
      await insertN(s, c, 5);
      const total = (r: { counts: JobCount[] }) => r.counts.reduce((n, x) => n + x.count, 0);
      const due = total(before) + 5;

      const capped = await s.queues.dueCounts({ limit: 2 });
      assert.equal(total(capped), 2);
      assert.equal(capped.complete, false);
      for (const g of capped.counts) assert.equal(g.due, g.count);
      const exactlyAll = await s.queues.dueCounts({ limit: due });
      assert.equal(total(exactlyAll), due);
      assert.equal(exactlyAll.complete, false, 'a read that reached its limit cannot tell whether more were due');
      const more = await s.queues.dueCounts({ limit: due + 1 });
      assert.equal(more.complete, true);
      assert.deepEqual(more.counts.find((g) => g.type === c), { queue: 'default', type: c, status: 'queued', count: 5, due: 5 });
    });

    it('refuses a limit that is not a whole number from 1 to 100,000', async () => {
      for (const limit of [0, -1, 1.5, 100_001, Number.NaN]) {
        await assert.rejects(db.storage.queues.dueCounts({ limit }), ValidationError, String(limit));
      }
    });
  });
}
