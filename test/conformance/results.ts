/** Results and progress (src/core/storage-workflows.ts): stored by the fenced finish, or by a fenced progress write. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, assertBetween, finishOf, insertAndClaim, mustGet, sleep, useDb } from './helpers.js';

const RESULT = { total: 3, ids: ['a', 'b'], note: 'ünïcode <b>&</b>' };

export function resultTests(h: ConformanceHarness): void {
  describe('workflows: results and progress', () => {
    const db = useDb(h);

    it('a succeeded finish stores its result; get and list read it back parsed', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const [r] = await s.leases.finish({ items: [finishOf(c, { result: JSON.stringify(RESULT) })] });
      assert.equal(r!.applied, true);
      assert.deepEqual((await mustGet(s, c.id)).result, RESULT);
      const [listed] = await s.jobs.list({ type: c.type, limit: 5 });
      assert.deepEqual(listed!.result, RESULT);
    });

    it('results of several jobs finished in one batch each land on their own job; a job without one has none', async () => {
      const s = db.storage;
      const [a, b, c] = [await insertAndClaim(s), await insertAndClaim(s), await insertAndClaim(s)];
      const res = await s.leases.finish({ items: [finishOf(a, { result: '1' }), finishOf(b), finishOf(c, { result: '"three"' })] });
      assert.deepEqual(res.map((x) => x.applied), [true, true, true]);
      assert.equal((await mustGet(s, a.id)).result, 1);
      assert.equal('result' in (await mustGet(s, b.id)), false);
      assert.equal((await mustGet(s, c.id)).result, 'three');
    });

    it('a finish under a lost lease stores no result', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const [r] = await s.leases.finish({ items: [finishOf({ id: c.id, leaseToken: WRONG_TOKEN }, { result: '{"x":1}' })] });
      assert.equal(r!.applied, false);
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'running');
      assert.equal('result' in j, false);
    });

    it('progress: written under the lease with its note and the database time, kept after the job ends', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      assert.equal('progress' in c, false, 'a fresh job has no progress');
      const t0 = (await s.now()).getTime();
      assert.equal(await s.workflows.progress({ id: c.id, leaseToken: c.leaseToken, value: '{"done":1,"total":4}', note: 'first' }), true);
      assert.equal(await s.workflows.progress({ id: c.id, leaseToken: c.leaseToken, value: '{"done":2,"total":4}', note: null }), true);
      const t1 = (await s.now()).getTime();
      const p = (await mustGet(s, c.id)).progress;
      assert.deepEqual(p?.value, { done: 2, total: 4 });
      assert.equal(p?.note, null);
      assertBetween(p!.at.getTime(), t0, t1, 'progress at');
      await s.leases.finish({ items: [finishOf(c)] });
      assert.deepEqual((await mustGet(s, c.id)).progress?.value, { done: 2, total: 4 });
    });

    it('progress is refused (false, nothing written) under another token, on a job no longer running, and for a job that does not exist', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      assert.equal(await s.workflows.progress({ id: c.id, leaseToken: WRONG_TOKEN, value: '1', note: 'stale' }), false);
      assert.equal('progress' in (await mustGet(s, c.id)), false, 'a stale worker wrote nothing');
      await s.leases.finish({ items: [finishOf(c)] });
      assert.equal(await s.workflows.progress({ id: c.id, leaseToken: c.leaseToken, value: '2', note: null }), false);
      assert.equal('progress' in (await mustGet(s, c.id)), false, 'nothing written after the finish');
      assert.equal(await s.workflows.progress({ id: '999999999', leaseToken: c.leaseToken, value: '3', note: null }), false);
      assert.equal(await s.workflows.progress({ id: 'nope', leaseToken: c.leaseToken, value: '3', note: null }), false);
    });

    it('a rescued lease fences progress: the old holder is refused, the new one writes', async () => {
      const s = db.storage;
      const old = await insertAndClaim(s, { leaseMs: 1 });
      await sleep(10);
      await s.leases.finish({ items: [finishOf(old, { status: 'queued', runAfterMs: 0, onlyIfExpired: true, attempt: { outcome: 'lease_expired' } })] });
      const [fresh] = await s.leases.claim({ workerId: 'w2', types: [old.type], queues: null, limit: 1, leaseMs: 30_000 });
      assert.ok(fresh);
      assert.equal(await s.workflows.progress({ id: old.id, leaseToken: old.leaseToken, value: '"old"', note: null }), false);
      assert.equal(await s.workflows.progress({ id: fresh.id, leaseToken: fresh.leaseToken, value: '"new"', note: null }), true);
      assert.equal((await mustGet(s, old.id)).progress?.value, 'new');
    });
  });
}
