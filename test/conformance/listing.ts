/** Read side and retention: jobs.list, queues.counts, attempts.list, jobs.prune. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobCount } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, insertAndClaim, insertN, newJob, sleep, uniq, useDb } from './helpers.js';

export function listingTests(h: ConformanceHarness): void {
  describe('jobs.list / queues.counts / attempts.list', () => {
    const db = useDb(h);

    // first in its block, on a fresh database, so ids cross from one digit to two
    it('lists newest first in numeric id order, with filters and keyset pagination', async () => {
      const s = db.storage;
      const [a, b] = [uniq('list'), uniq('list')];
      const ids: string[] = [];
      for (let i = 0; i < 14; i++) {
        const [r] = await s.jobs.insert({ jobs: [newJob(i % 2 === 0 ? a : b, { queue: i % 3 === 0 ? 'q3' : 'default', payload: { i } })] });
        ids.push(r!.job.id);
      }
      const desc = [...ids].sort((x, y) => Number(y) - Number(x));
      const all = await s.jobs.list({ limit: 100 });
      const mine = all.map((j) => j.id).filter((id) => ids.includes(id));
      assert.deepEqual(mine, desc, 'newest first, numerically');
      for (let i = 1; i < all.length; i++) assert.ok(Number(all[i - 1]!.id) > Number(all[i]!.id));

      const byType = await s.jobs.list({ type: a, limit: 100 });
      assert.deepEqual(byType.map((j) => j.id), desc.filter((id) => ids.indexOf(id) % 2 === 0));
      const byQueue = await s.jobs.list({ type: a, queue: 'q3', limit: 100 });
      assert.deepEqual(byQueue.map((j) => (j.payload as { i: number }).i), [12, 6, 0]);

      // page through both types together, 4 at a time
      const paged: string[] = [];
      let beforeId: string | undefined;
      for (;;) {
        const raw = await s.jobs.list({ limit: 4, beforeId });
        assert.ok(raw.length <= 4);
        if (raw.length === 0) break;
        paged.push(...raw.filter((j) => j.type === a || j.type === b).map((j) => j.id));
        beforeId = raw[raw.length - 1]!.id;
      }
      assert.deepEqual(paged, desc);

      const c = await claimOne(s, a);
      const running = await s.jobs.list({ status: 'running', type: a, limit: 100 });
      assert.deepEqual(running.map((j) => j.id), [c.id]);
      assert.equal((await s.jobs.list({ status: 'queued', type: a, limit: 100 })).length, 6);
      assert.equal((await s.jobs.list({ type: a, limit: 3 })).length, 3);
    });

    it('queues.counts groups by queue, type and status; due counts due rows with run_at <= now', async () => {
      const s = db.storage;
      const type = uniq('count');
      await insertN(s, type, 4);
      await s.jobs.insert({ jobs: [newJob(type, { runAfterMs: 60_000 }), newJob(type, { queue: 'other' })] });
      // four claimed: one fails due now, one fails later, one succeeds, one stays running
      const claimed = await s.leases.claim({ workerId: 'w', types: [type], queues: ['default'], limit: 4, leaseMs: 60_000 });
      assert.equal(claimed.length, 4);
      await finish(s, claimed[0]!, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } });
      await finish(s, claimed[1]!, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      await finish(s, claimed[2]!);
      await s.jobs.insert({ jobs: [newJob(type)] });

      const counts = (await s.queues.counts()).filter((c) => c.type === type);
      const key = (c: JobCount) => `${c.queue}/${c.status}`;
      const got = Object.fromEntries(counts.map((c) => [key(c), { count: c.count, due: c.due }]));
      assert.deepEqual(got, {
        'default/queued': { count: 2, due: 1 },
        'default/running': { count: 1, due: 0 },
        'default/failed': { count: 2, due: 1 },
        'default/succeeded': { count: 1, due: 0 },
        'other/queued': { count: 1, due: 1 },
      });
      for (const c of counts) assert.equal(typeof c.count, 'number');
    });

    it('attempts.list is chronological, one row per attempt', async () => {
      const s = db.storage;
      const c1 = await insertAndClaim(s, { workerId: 'wa' });
      await finish(s, c1, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } });
      await sleep(3);
      const c2 = await claimOne(s, c1.type, 30_000, 'wb');
      await finish(s, c2, { status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'snoozed' } });
      await sleep(3);
      const c3 = await claimOne(s, c1.type, 30_000, 'wc');
      await finish(s, c3);
      const rows = await s.attempts.list({ jobId: c1.id });
      assert.deepEqual(
        rows.map((r) => [r.attempt, r.workerId, r.outcome, r.leaseToken]),
        [
          [1, 'wa', 'failed', c1.leaseToken],
          [2, 'wb', 'snoozed', c2.leaseToken],
          [2, 'wc', 'succeeded', c3.leaseToken],
        ],
      );
      for (let i = 1; i < rows.length; i++) assert.ok(rows[i]!.startedAt.getTime() >= rows[i - 1]!.startedAt.getTime());
      assert.equal(new Set(rows.map((r) => r.id)).size, 3);
      assert.deepEqual(await s.attempts.list({ jobId: '987654321' }), []);
    });
  });

  describe('jobs.prune', () => {
    const db = useDb(h);

    it('deletes only listed statuses finished longer ago than olderThanMs, with their attempts, not their effects', async () => {
      const s = db.storage;
      const oldOk = await insertAndClaim(s);
      const effKey = uniq('eff');
      assert.deepEqual(await s.effects.reserve({ key: effKey, jobId: oldOk.id, leaseToken: oldOk.leaseToken }), { state: 'reserved' });
      assert.equal(await s.effects.complete({ key: effKey, jobId: oldOk.id, leaseToken: oldOk.leaseToken, result: { sent: true } }), true);
      await finish(s, oldOk);
      const oldDead = await insertAndClaim(s);
      await finish(s, oldDead, { status: 'dead', attempt: { outcome: 'dead' } });
      const oldCancelled = await insertAndClaim(s);
      await finish(s, oldCancelled, { status: 'cancelled', attempt: { outcome: 'cancelled' } });
      const failed = await insertAndClaim(s);
      await finish(s, failed, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      const [queued] = await s.jobs.insert({ jobs: [newJob(uniq('prune'), { runAfterMs: 60_000 })] });
      await sleep(150);
      const recent = await insertAndClaim(s);
      await finish(s, recent);
      const effectsBefore = await s.effects.count();

      const n = await s.jobs.prune({ olderThanMs: 100, statuses: ['succeeded', 'dead', 'failed', 'queued'], limit: 100 });
      assert.equal(n, 2);
      assert.equal(await s.jobs.get({ id: oldOk.id }), null);
      assert.equal(await s.jobs.get({ id: oldDead.id }), null);
      assert.deepEqual(await s.attempts.list({ jobId: oldOk.id }), [], 'attempts go with the job');
      for (const id of [oldCancelled.id, failed.id, queued!.job.id, recent.id]) assert.ok(await s.jobs.get({ id }), `job ${id} kept`);
      assert.equal((await s.attempts.list({ jobId: recent.id })).length, 1);
      assert.equal(await s.effects.count(), effectsBefore, 'the effect ledger is never pruned');
      const [eff] = await s.effects.list({ jobId: oldOk.id, limit: 10 });
      assert.equal(eff?.key, effKey);
      assert.deepEqual(eff?.result, { sent: true });
    });

    it('honours limit', async () => {
      const s = db.storage;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const c = await insertAndClaim(s);
        await finish(s, c, { status: 'dead', attempt: { outcome: 'dead' } });
        ids.push(c.id);
      }
      await sleep(30);
      assert.equal(await s.jobs.prune({ olderThanMs: 10, statuses: ['dead'], limit: 2 }), 2);
      assert.equal((await Promise.all(ids.map((id) => s.jobs.get({ id })))).filter(Boolean).length, 1);
      assert.equal(await s.jobs.prune({ olderThanMs: 10, statuses: ['dead'], limit: 2 }), 1);
      assert.equal(await s.jobs.prune({ olderThanMs: 10, statuses: ['dead'], limit: 2 }), 0);
    });
  });

  describe('job ids', () => {
    const db = useDb(h);

    // on a fresh database, so the pruned job is the newest: the effect ledger names pruned jobs
    // by id, so no later job may take it (SQLite: the floor of schema 6)
    it('a pruned job’s id is never handed out again, whether the next insert is one job or a run', async () => {
      const s = db.storage;
      const older = await insertAndClaim(s);
      const newest = await insertAndClaim(s);
      await finish(s, newest);
      await sleep(30);
      assert.equal(await s.jobs.prune({ olderThanMs: 10, statuses: ['succeeded'], limit: 10 }), 1);
      assert.equal(await s.jobs.get({ id: newest.id }), null);
      const type = uniq('ids');
      const one = await s.jobs.insert({ jobs: [newJob(type)] });
      const run = await s.jobs.insert({ jobs: [newJob(type), newJob(type), newJob(type)] });
      const ids = [...one, ...run].map((r) => BigInt(r.job.id));
      assert.ok(ids.every((id) => id > BigInt(newest.id)), `ids ${ids.join(', ')} after pruned ${newest.id}`);
      assert.equal(new Set(ids).size, 4);
      assert.ok(await s.jobs.get({ id: older.id }), 'the older job is kept');
    });
  });
}
