/**
 * jobs.countMatching and queues.summary: exact up to the cap; past it the planner's estimate
 * (marked estimated, above the cap) or the cap itself; with text, the matches among the
 * candidates the text test saw. The summary groups only the statuses it counted exactly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobCount, MatchCount } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, insertN, newJob, uniq, useDb } from './helpers.js';

/** A count past its cap: the planner's estimate above the cap, or exactly the cap. */
function assertPastCap(c: MatchCount, cap: number, what: string): void {
  assert.equal(c.exact, false, what);
  if (c.estimated) assert.ok(c.count > cap, `${what}: an estimate is reported above the cap (${c.count})`);
  else assert.equal(c.count, cap, what);
}

const byKey = (a: JobCount, b: JobCount): number => `${a.queue}/${a.type}/${a.status}`.localeCompare(`${b.queue}/${b.type}/${b.status}`);

export function countTests(h: ConformanceHarness): void {
  describe('jobs.countMatching', () => {
    const db = useDb(h);

    it('exact up to the cap, past it an estimate or the cap', async () => {
      const s = db.storage;
      const t = uniq('count');
      await insertN(s, t, 5);
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: t }, cap: 10 }), { count: 5, exact: true, estimated: false });
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: t }, cap: 5 }), { count: 5, exact: true, estimated: false });
      assertPastCap(await s.jobs.countMatching({ filter: { type: t }, cap: 3 }), 3, 'five jobs, cap 3');
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: uniq('none') } }), { count: 0, exact: true, estimated: false });
    });

    it('with text: the matches among the candidates, exact only when the candidates ran out', async () => {
      const s = db.storage;
      const t = uniq('count');
      await s.jobs.insert({ jobs: ['hit', 'miss', 'miss', 'HIT'].map((w) => newJob(t, { payload: { w } })) });
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: t, text: 'hit' }, cap: 10 }), { count: 2, exact: true, estimated: false });
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: t, text: 'hit' }, cap: 10, scanLimit: 2 }), { count: 1, exact: false, estimated: false });
      assert.deepEqual(await s.jobs.countMatching({ filter: { type: t, text: 'hit' }, cap: 1 }), { count: 1, exact: false, estimated: false });
    });
  });

  describe('queues.summary', () => {
    const db = useDb(h);

    it('counts each status up to the cap and groups the exact ones by queue and type, with due', async () => {
      const s = db.storage;
      const [a, b] = [uniq('sum'), uniq('sum')];
      await insertN(s, a, 3);
      await s.jobs.insert({ jobs: [newJob(a, { runAfterMs: 60_000 })] });
      await finish(s, await claimOne(s, a));
      await insertN(s, b, 2, { queue: 'other' });
      await finish(s, await claimOne(s, b), { status: 'dead', attempt: { outcome: 'dead' } });
      await finish(s, await claimOne(s, b), { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } });

      const all = await s.queues.summary();
      assert.deepEqual(all.statuses, [
        { status: 'queued', count: 3, exact: true, estimated: false },
        { status: 'running', count: 0, exact: true, estimated: false },
        { status: 'succeeded', count: 1, exact: true, estimated: false },
        { status: 'failed', count: 1, exact: true, estimated: false },
        { status: 'dead', count: 1, exact: true, estimated: false },
        { status: 'cancelled', count: 0, exact: true, estimated: false },
        { status: 'waiting', count: 0, exact: true, estimated: false },
      ]);
      const groups: JobCount[] = [
        { queue: 'default', type: a, status: 'queued', count: 3, due: 2 },
        { queue: 'default', type: a, status: 'succeeded', count: 1, due: 0 },
        { queue: 'other', type: b, status: 'dead', count: 1, due: 0 },
        { queue: 'other', type: b, status: 'failed', count: 1, due: 1 },
      ];
      assert.deepEqual([...all.groups].sort(byKey), groups.sort(byKey));

      const capped = await s.queues.summary({ cap: 2 });
      const queued = capped.statuses.find((x) => x.status === 'queued')!;
      assertPastCap(queued, 2, 'three queued, cap 2');
      assert.deepEqual(capped.statuses.filter((x) => x.status !== 'queued'), all.statuses.filter((x) => x.status !== 'queued'));
      assert.deepEqual([...capped.groups].sort(byKey), all.groups.filter((g) => g.status !== 'queued').sort(byKey), 'a status past its cap is not grouped');
    });
  });
}
