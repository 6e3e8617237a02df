/** diagnostics.prunable (what `leasehold prune --dry-run` reports), jobs.pruneBatch's cursor, and diagnostics.inspect. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finish, insertAndClaim, newJob, sleep, uniq, useDb } from './helpers.js';

/** between the old finished jobs and the recent one: a retention of half of it, counted from the recent job's finish, splits them */
const GAP_MS = 1_200;

export function pruneTests(h: ConformanceHarness): void {
  describe('diagnostics.prunable', () => {
    const db = useDb(h);

    it('counts exactly what jobs.prune then deletes, without its limit, and deletes nothing itself', async () => {
      const s = db.storage;
      const ids: Record<string, string[]> = { succeeded: [], dead: [], cancelled: [] };
      for (const status of ['succeeded', 'succeeded', 'succeeded', 'dead', 'dead', 'cancelled'] as const) {
        const c = await insertAndClaim(s);
        await finish(s, c, { status, attempt: { outcome: status } });
        ids[status]!.push(c.id);
      }
      const failed = await insertAndClaim(s);
      await finish(s, failed, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      const running = await insertAndClaim(s);
      const [queued] = await s.jobs.insert({ jobs: [newJob(uniq('queued'), { runAfterMs: 60_000 })] });
      await sleep(GAP_MS);
      const recent = await insertAndClaim(s);
      await finish(s, recent);
      const recentAt = (await s.jobs.get({ id: recent.id }))!.finishedAt!.getTime();
      // a retention that splits the two groups as of the database's now, however long the test took to get here
      const split = async () => (await s.now()).getTime() - recentAt + GAP_MS / 2;

      const ask = async (statuses: ('succeeded' | 'dead' | 'cancelled' | 'failed' | 'queued' | 'running')[], olderThanMs?: number) => s.diagnostics.prunable({ statuses, olderThanMs: olderThanMs ?? (await split()) });
      assert.equal(await ask(['succeeded']), 3, 'the recent succeeded job is not past retention');
      assert.equal(await ask(['dead', 'cancelled']), 3);
      assert.equal(await ask(['failed', 'queued', 'running']), 0, 'only finished jobs have a finish time');
      assert.equal(await ask([]), 0);
      assert.equal(await ask(['succeeded'], 60_000), 0, 'nothing finished a minute ago');
      for (const id of [...ids.succeeded!, ...ids.dead!, ...ids.cancelled!, failed.id, running.id, queued!.job.id, recent.id]) {
        assert.ok(await s.jobs.get({ id }), `job ${id} is still there after counting`);
      }

      assert.equal(await s.jobs.prune({ statuses: ['succeeded'], olderThanMs: await split(), limit: 2 }), 2);
      assert.equal(await ask(['succeeded']), 1, 'what the limited prune left');
      assert.equal(await s.jobs.prune({ statuses: ['succeeded', 'dead', 'cancelled'], olderThanMs: await split(), limit: 100 }), 1 + 3);
      assert.equal(await ask(['succeeded', 'dead', 'cancelled']), 0);
      assert.ok(await s.jobs.get({ id: recent.id }));
    });
  });

  describe('jobs.pruneBatch: a pass of batches, each after the last', () => {
    const db = useDb(h);

    /** a finished job of that status, its finish a few ms after the previous one's */
    const finished = async (s: Storage, status: 'succeeded' | 'dead' | 'cancelled' = 'succeeded') => {
      const c = await insertAndClaim(s);
      await finish(s, c, { status, attempt: { outcome: status } });
      await sleep(3);
      return c.id;
    };
    const exists = async (s: Storage, id: string) => (await s.jobs.get({ id })) !== null;

    it('starts after its cursor: a job finished before it is left, those after it are deleted', async () => {
      const s = db.storage;
      const [a, b, c, d] = [await finished(s), await finished(s, 'dead'), await finished(s), await finished(s)];
      await sleep(5);
      const first = await s.jobs.pruneBatch({ statuses: ['dead'], olderThanMs: 0, limit: 100 });
      assert.equal(first.deleted, 1);
      assert.equal(first.cursor?.id, b, 'the cursor names the last job deleted');
      const out = await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 0, limit: 100, after: first.cursor });
      assert.equal(out.deleted, 2);
      assert.deepEqual([await exists(s, a!), await exists(s, c!), await exists(s, d!)], [true, false, false]);
      assert.equal(out.cursor?.id, d);
      const none = await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 0, limit: 100, after: out.cursor });
      assert.deepEqual(none, { deleted: 0, cursor: out.cursor }, 'nothing after it: the same cursor back');
      assert.equal((await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 0, limit: 100 })).deleted, 1, 'without a cursor, from the oldest');
    });

    it('refuses a cursor no prune batch returned before deleting anything, the same on every database', async () => {
      const s = db.storage;
      const id = await finished(s);
      await sleep(5);
      const beyond = [{ finishedAt: new Date(Date.UTC(10_000, 0, 1)), id }, { finishedAt: new Date(), id: '9223372036854775808' }];
      for (const after of [{ finishedAt: new Date(NaN), id }, { finishedAt: new Date(), id: 'x1' }, { finishedAt: '2026-01-01', id } as unknown as { finishedAt: Date; id: string }, ...beyond]) {
        await assert.rejects(s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 0, limit: 10, after }), (e: Error) => e instanceof ValidationError && /after must be a cursor/.test(e.message), JSON.stringify(after));
      }
      assert.ok(await exists(s, id));
      assert.equal(await s.jobs.prune({ statuses: ['succeeded'], olderThanMs: 0, limit: 10 }), 1);
    });

    it('a pass of small batches deletes each prunable job once, jobs finished during the pass included, exactly what one big prune would', async () => {
      const s = db.storage;
      const ids: string[] = [];
      for (const status of ['succeeded', 'dead', 'succeeded', 'succeeded', 'cancelled', 'succeeded', 'succeeded'] as const) ids.push(await finished(s, status));
      const failed = await insertAndClaim(s);
      await finish(s, failed, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      await sleep(5);
      const expected = await s.diagnostics.prunable({ statuses: ['succeeded'], olderThanMs: 0 });
      assert.equal(expected, 5);
      let after = null;
      let total = 0;
      const seen = new Set<string>();
      for (let batch = 0; batch < 20; batch++) {
        const out = await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 0, limit: 2, after });
        total += out.deleted;
        if (out.deleted > 0) {
          assert.ok(!seen.has(out.cursor!.id), 'no job is deleted twice');
          seen.add(out.cursor!.id);
        }
        after = out.cursor;
        if (batch === 0) {
          // finished after the cursor, while the pass runs: this pass takes it
          ids.push(await finished(s));
          await sleep(5);
        }
        if (out.deleted < 2) break;
      }
      assert.equal(total, expected + 1, 'every prunable job once, the one finished during the pass too');
      assert.equal(await s.diagnostics.prunable({ statuses: ['succeeded'], olderThanMs: 0 }), 0);
      assert.equal(await s.diagnostics.prunable({ statuses: ['dead', 'cancelled'], olderThanMs: 0 }), 2, 'other statuses stay');
      assert.ok(await exists(s, failed.id));
    });
  });

  describe('diagnostics.inspect', () => {
    const db = useDb(h);

    it('on a freshly migrated database: every index the migrations create is present, tables are sized, settings are named per database', async () => {
      const s = db.storage;
      await s.jobs.insert({ jobs: [newJob(uniq('sized')), newJob(uniq('sized'))] });
      const facts = await s.diagnostics.inspect();
      assert.deepEqual(facts.indexes.filter((i) => i.state !== 'present'), [], 'nothing missing');
      if (s.dialect !== 'memory') {
        assert.ok(facts.indexes.some((i) => /jobs/.test(i.table)), `indexes on jobs among ${facts.indexes.map((i) => i.name).join(', ')}`);
        for (const i of facts.indexes) assert.match(i.definition, new RegExp(i.name), 'the definition names its index');
      }
      const jobs = facts.tables.find((t) => /(^|_)jobs$/.test(t.name));
      assert.ok(jobs, `a jobs table among ${facts.tables.map((t) => t.name).join(', ')}`);
      // estimates lag behind (statistics), exact counts do not
      if (!jobs.estimated) assert.equal(jobs.rows, 2);
      for (const x of facts.settings) assert.match(x.name, /^(sqlite|postgres|mysql)\.\w+$/);
    });
  });
}
