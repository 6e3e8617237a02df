/** jobs.insert and jobs.get: defaults, run_at, idempotency keys, payload round trips. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConformanceHarness } from './index.js';
import { assertBetween, mustGet, newJob, uniq, useDb } from './helpers.js';

export function insertTests(h: ConformanceHarness): void {
  describe('jobs.insert', () => {
    const db = useDb(h);

    it('inserts with the documented defaults and returns the stored row', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const t0 = (await s.now()).getTime();
      const [r] = await s.jobs.insert({ jobs: [
        newJob(type, { queue: 'mail', payload: { to: 'a@b.c' }, priority: 7, maxAttempts: 4, timeoutMs: 1234, maxRuntimeMs: 56789 }),
      ] });
      const t1 = (await s.now()).getTime();
      assert.ok(r);
      assert.equal(r.created, true);
      const j = r.job;
      assert.match(j.id, /^[1-9][0-9]*$/, 'ids are decimal strings');
      assert.equal(j.queue, 'mail');
      assert.equal(j.type, type);
      assert.deepEqual(j.payload, { to: 'a@b.c' });
      assert.equal(j.status, 'queued');
      assert.equal(j.priority, 7);
      assert.equal(j.attempts, 0);
      assert.equal(j.maxAttempts, 4);
      assert.equal(j.idempotencyKey, null);
      for (const k of ['lockedBy', 'leaseToken', 'lockedUntil', 'heartbeatAt', 'startedAt', 'finishedAt', 'lastErrorCode', 'lastError'] as const) {
        assert.equal(j[k], null, `${k} starts null`);
      }
      assert.equal(j.timeoutMs, 1234);
      assert.equal(j.maxRuntimeMs, 56789);
      assert.ok(j.createdAt instanceof Date && j.updatedAt instanceof Date && j.runAt instanceof Date);
      assertBetween(j.createdAt.getTime(), t0, t1, 'createdAt');
      assertBetween(j.updatedAt.getTime(), t0, t1, 'updatedAt');
      assertBetween(j.runAt.getTime(), t0, t1, 'runAt with runAfterMs 0');
      assert.deepEqual(await s.jobs.get({ id: j.id }), j, 'jobs.get returns the same row');
    });

    it('a batch returns each stored row: alike jobs (one run), and alike ones mixed with others', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const runAt = new Date((await s.now()).getTime() + 60_000);
      runAt.setUTCMilliseconds(321);
      const alike = Array.from({ length: 4 }, (_, i) => newJob(type, { queue: 'bulk', payload: { i }, priority: 2, maxAttempts: 3, timeoutMs: 4_000, maxRuntimeMs: 9_000, runAt }));
      const delayed = Array.from({ length: 3 }, (_, i) => newJob(type, { payload: [i], runAfterMs: 30_000 }));
      const mixed = [newJob(type, { payload: 'a' }), newJob(uniq('ins'), { payload: 'b', priority: 5 }), newJob(type, { payload: 'c', runAfterMs: 1_000 })];
      for (const batch of [alike, delayed, mixed]) {
        const res = await s.jobs.insert({ jobs: batch });
        assert.equal(res.length, batch.length);
        for (const [i, r] of res.entries()) {
          assert.equal(r.created, true);
          assert.deepEqual(r.job.payload, batch[i]!.payload, `item ${i} in input order`);
          assert.deepEqual(await s.jobs.get({ id: r.job.id }), r.job, `item ${i}: the row handed back is the stored row`);
        }
        for (const r of res.slice(1)) assert.notEqual(r.job.runAt, res[0]!.job.runAt, 'each row its own Date objects');
      }
    });

    it('sets run_at = now + runAfterMs', async () => {
      const s = db.storage;
      const t0 = (await s.now()).getTime();
      const [r] = await s.jobs.insert({ jobs: [newJob(uniq('ins'), { runAfterMs: 90_000 })] });
      const t1 = (await s.now()).getTime();
      assertBetween(r!.job.runAt.getTime(), t0 + 90_000, t1 + 90_000, 'runAt');
    });

    it('an explicit runAt wins over runAfterMs', async () => {
      const s = db.storage;
      const runAt = new Date((await s.now()).getTime() + 3_600_000);
      runAt.setUTCMilliseconds(123);
      const [r] = await s.jobs.insert({ jobs: [newJob(uniq('ins'), { runAt, runAfterMs: 5_000 })] });
      assert.equal(r!.job.runAt.getTime(), runAt.getTime());
      assert.equal((await mustGet(s, r!.job.id)).runAt.getTime(), runAt.getTime());
    });

    it('returns results in input order with increasing numeric ids', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const res = await s.jobs.insert({ jobs: Array.from({ length: 5 }, (_, i) => newJob(type, { payload: { i } })) });
      assert.deepEqual(res.map((r) => (r.job.payload as { i: number }).i), [0, 1, 2, 3, 4]);
      const ids = res.map((r) => Number(r.job.id));
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `ids increase: ${ids.join(',')}`);
      const [later] = await s.jobs.insert({ jobs: [newJob(type)] });
      assert.ok(Number(later!.job.id) > ids[4]!);
      assert.deepEqual(await s.jobs.insert({ jobs: [] }), []);
    });

    it('a duplicate idempotency key in a later call returns the existing row and inserts nothing', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const key = uniq('key');
      const [first] = await s.jobs.insert({ jobs: [newJob(type, { idempotencyKey: key, payload: { v: 'first' } })] });
      assert.equal(first!.created, true);
      assert.equal(first!.job.idempotencyKey, key);
      const [dup] = await s.jobs.insert({ jobs: [newJob(type, { idempotencyKey: key, payload: { v: 'second' }, priority: 9 })] });
      assert.equal(dup!.created, false);
      assert.equal(dup!.job.id, first!.job.id);
      assert.deepEqual(dup!.job.payload, { v: 'first' }, 'the existing row, not the new input');
      assert.equal(dup!.job.priority, 0);
      const rows = await s.jobs.list({ type, limit: 10 });
      assert.equal(rows.length, 1);
    });

    it('a duplicate key within one batch returns the earlier item', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const key = uniq('key');
      const res = await s.jobs.insert({ jobs: [
        newJob(type, { idempotencyKey: key, payload: { v: 1 } }),
        newJob(type, { payload: { v: 2 } }),
        newJob(type, { idempotencyKey: key, payload: { v: 3 } }),
      ] });
      assert.deepEqual(res.map((r) => r.created), [true, true, false]);
      assert.equal(res[2]!.job.id, res[0]!.job.id);
      assert.deepEqual(res[2]!.job.payload, { v: 1 });
      assert.equal((await s.jobs.list({ type, limit: 10 })).length, 2);
    });

    it('null idempotency keys never collide', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const res = await s.jobs.insert({ jobs: [newJob(type), newJob(type)] });
      const res2 = await s.jobs.insert({ jobs: [newJob(type)] });
      assert.deepEqual([...res, ...res2].map((r) => r.created), [true, true, true]);
      assert.equal((await s.jobs.list({ type, limit: 10 })).length, 3);
    });

    it('payloads round-trip as JSON: nested objects, arrays, unicode, numbers', async () => {
      const s = db.storage;
      const type = uniq('ins');
      const payloads: unknown[] = [
        {
          nested: { deep: { deeper: [1, { x: null }, [true, false]] } },
          unicode: 'naïve café — 日本語 — 🚀👩‍👩‍👧 — \u0000-free',
          quotes: 'he said "hi" \\ back\\slash\nnewline\ttab',
          ints: [0, 1, -1, 2147483647, -2147483648, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER],
          floats: [0.1, -2.5, 1e-7, 6.02e23, 3.141592653589793],
          empty: { obj: {}, arr: [], str: '' },
          bool: true,
          nul: null,
        },
        [1, 'two', { three: 3 }],
        'just a string',
        42,
        null,
        true,
      ];
      const res = await s.jobs.insert({ jobs: payloads.map((payload) => newJob(type, { payload })) });
      for (const [i, r] of res.entries()) {
        assert.deepEqual(r.job.payload, payloads[i], `insert result ${i}`);
        assert.deepEqual((await mustGet(s, r.job.id)).payload, payloads[i], `getJob ${i}`);
      }
    });

    it('hands out copies: mutating a returned row changes nothing stored', async () => {
      const s = db.storage;
      const [r] = await s.jobs.insert({ jobs: [newJob(uniq('ins'), { payload: { list: [1, 2] } })] });
      (r!.job.payload as { list: number[] }).list.push(3);
      r!.job.runAt.setTime(0);
      r!.job.status = 'dead';
      const again = await mustGet(s, r!.job.id);
      assert.deepEqual(again.payload, { list: [1, 2] });
      assert.notEqual(again.runAt.getTime(), 0);
      assert.equal(again.status, 'queued');
    });

    it('jobs.get of an unknown id is null; now() is a Date that does not go backwards', async () => {
      const s = db.storage;
      assert.equal(await s.jobs.get({ id: '987654321' }), null);
      const a = await s.now();
      const b = await s.now();
      assert.ok(a instanceof Date && !Number.isNaN(a.getTime()));
      assert.ok(b.getTime() >= a.getTime());
    });
  });
}
