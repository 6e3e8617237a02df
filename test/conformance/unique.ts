/**
 * Unique keys on insert: 'active' holds while a job is queued, failed or running and then frees
 * the key; 'debounce' replaces a waiting holder's payload and run_at, and takes the key from a
 * running one. Each insert says what it did (created, existing, replaced); concurrent inserts of
 * one key from several connections make one job. Also the concurrency key's round trip.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InsertResult, NewJob, Storage, UniqueMode } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { finish, mustGet, newJob, uniq, useDb } from './helpers.js';

function withKey(type: string, key: string, mode: UniqueMode, over: Partial<NewJob> = {}): NewJob {
  return newJob(type, { unique: { key, mode }, ...over });
}

async function one(s: Storage, job: NewJob): Promise<InsertResult> {
  const [r] = await s.jobs.insert({ jobs: [job] });
  assert.ok(r);
  return r;
}

export function uniqueTests(h: ConformanceHarness): void {
  describe('unique keys', () => {
    const db = useDb(h);

    it("'active': the holder is returned while queued or running; once it succeeded the key makes a new job", async () => {
      const s = db.storage;
      const [type, key] = [uniq('ua'), uniq('key')];
      const first = await one(s, withKey(type, key, 'active', { payload: { v: 1 } }));
      assert.equal(first.outcome, 'created');
      assert.equal(first.created, true);
      assert.equal(first.job.uniqueKey, key);
      const again = await one(s, withKey(type, key, 'active', { payload: { v: 2 } }));
      assert.deepEqual([again.outcome, again.created, again.job.id], ['existing', false, first.job.id]);
      assert.deepEqual(again.job.payload, { v: 1 }, 'the holder is untouched');
      const [running] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
      assert.ok(running);
      assert.equal((await one(s, withKey(type, key, 'active'))).job.id, first.job.id, 'a running holder still holds');
      await finish(s, running);
      const later = await one(s, withKey(type, key, 'active'));
      assert.equal(later.outcome, 'created');
      assert.notEqual(later.job.id, first.job.id);
    });

    it("'debounce': a waiting holder gets the new payload and run_at; a running one gives the key up", async () => {
      const s = db.storage;
      const [type, key] = [uniq('ud'), uniq('key')];
      const first = await one(s, withKey(type, key, 'debounce', { payload: { v: 1 } }));
      assert.equal(first.outcome, 'created');
      const second = await one(s, withKey(type, key, 'debounce', { payload: { v: 2 }, runAfterMs: 60_000 }));
      assert.equal(second.outcome, 'replaced');
      assert.equal(second.created, false);
      assert.equal(second.job.id, first.job.id);
      assert.deepEqual(second.job.payload, { v: 2 });
      const row = await mustGet(s, first.job.id);
      assert.deepEqual(row.payload, { v: 2 });
      assert.ok(row.runAt.getTime() >= first.job.runAt.getTime() + 59_000, 'run_at pushed by the new delay');
      assert.equal((await s.jobs.list({ type, limit: 10 })).length, 1);
      // due again, then running: the next enqueue makes a new job and the running one loses the key
      await one(s, withKey(type, key, 'debounce', { payload: { v: 3 } }));
      const [running] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
      assert.equal(running?.id, first.job.id);
      const third = await one(s, withKey(type, key, 'debounce', { payload: { v: 4 } }));
      assert.equal(third.outcome, 'created');
      assert.notEqual(third.job.id, first.job.id);
      assert.equal((await mustGet(s, first.job.id)).uniqueKey, undefined, 'the running job gave its key up');
      assert.equal((await mustGet(s, third.job.id)).uniqueKey, key);
    });

    it('one batch naming a key twice: one job, the second item answered from the first', async () => {
      const s = db.storage;
      const [type, k1, k2] = [uniq('ub'), uniq('key'), uniq('key')];
      const r = await s.jobs.insert({ jobs: [withKey(type, k1, 'active', { payload: { v: 1 } }), withKey(type, k1, 'active'), withKey(type, k2, 'debounce', { payload: { v: 1 } }), withKey(type, k2, 'debounce', { payload: { v: 2 } })] });
      assert.deepEqual(r.map((x) => x.outcome), ['created', 'existing', 'created', 'replaced']);
      assert.equal(r[1]?.job.id, r[0]?.job.id);
      assert.equal(r[3]?.job.id, r[2]?.job.id);
      assert.deepEqual((await mustGet(s, r[2]!.job.id)).payload, { v: 2 });
      assert.equal((await s.jobs.list({ type, limit: 10 })).length, 2);
    });

    it('an idempotency key answers existing; a concurrency key round-trips through get and claim', async () => {
      const s = db.storage;
      const [type, key] = [uniq('ui'), uniq('idem')];
      const a = await one(s, newJob(type, { idempotencyKey: key, concurrencyKey: 'tenant:42' }));
      const b = await one(s, newJob(type, { idempotencyKey: key }));
      assert.deepEqual([a.outcome, b.outcome, b.job.id], ['created', 'existing', a.job.id]);
      assert.equal((await mustGet(s, a.job.id)).concurrencyKey, 'tenant:42');
      const [c] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
      assert.equal(c?.concurrencyKey, 'tenant:42');
      const plain = await one(s, newJob(type));
      assert.equal(plain.job.concurrencyKey, undefined);
      assert.equal(plain.job.uniqueKey, undefined);
    });

    it('an operator retry of a job whose unique key another job now holds brings it back without the key', async () => {
      const s = db.storage;
      const [type, key] = [uniq('uretry'), uniq('key')];
      const first = await one(s, withKey(type, key, 'active'));
      const [c] = await s.leases.claim({ workerId: 'w', types: [type], queues: null, limit: 1, leaseMs: 60_000 });
      assert.ok(c);
      await finish(s, c, { status: 'dead', attempt: { outcome: 'failed' } });
      const second = await one(s, withKey(type, key, 'active'));
      assert.equal(second.outcome, 'created');
      const r = await s.jobs.retry({ id: first.job.id });
      assert.equal(r.applied, true);
      assert.equal(r.job?.status, 'queued');
      assert.equal(r.job?.uniqueKey, undefined, 'the retried job gave up the key the other holds');
      assert.equal((await mustGet(s, second.job.id)).uniqueKey, key);
    });

    for (const mode of ['active', 'debounce'] as const) {
      it(`race (${mode}): 8 connections inserting one key at once make one job`, async () => {
        const type = uniq(`urace-${mode}`);
        const key = uniq('key');
        const conns = await Promise.all(Array.from({ length: 8 }, () => db.connectAnother()));
        const results = await Promise.all(conns.map((c, i) => one(c, withKey(type, key, mode, { payload: { i } }))));
        assert.equal(results.filter((r) => r.outcome === 'created').length, 1, results.map((r) => r.outcome).join(','));
        assert.equal(new Set(results.map((r) => r.job.id)).size, 1, 'every answer names the same job');
        assert.ok(results.every((r) => r.outcome === 'created' || r.outcome === (mode === 'active' ? 'existing' : 'replaced')));
        assert.equal((await db.storage.jobs.list({ type, limit: 20 })).length, 1);
      });
    }
  });
}
