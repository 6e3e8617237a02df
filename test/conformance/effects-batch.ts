/**
 * The batched effect-ledger calls (effects.reserveMany, completeMany), where an adapter has them:
 * one call answers items in every state at once, in input order; a key twice is refused before
 * anything is written; two connections reserving the same keys in opposite orders, or one
 * recording keys while the other reserves them, never deadlock. The single-item semantics are pinned by ./effects.ts, which runs each of its
 * scenarios through one-item batches too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, claimOne, finish, insertAndClaim, uniq, useDb } from './helpers.js';

type Batched = Required<Pick<Storage['effects'], 'reserveMany' | 'completeMany'>>;

/** The adapter's batched calls, or a skip where it has none. */
function batchedOr(t: TestContext, s: Storage, name: string): Batched | null {
  if (!s.effects.reserveMany || !s.effects.completeMany) {
    t.skip(`${name} has no batched effect calls`);
    return null;
  }
  return s.effects as Batched;
}

export function effectBatchTests(h: ConformanceHarness): void {
  describe('effects, batched', () => {
    const db = useDb(h);

    it('one batch answers every state, in input order, each as if asked alone', async (t) => {
      const s = db.storage;
      const b = batchedOr(t, s, h.name);
      if (!b) return;
      const a = await insertAndClaim(s);
      const other = await insertAndClaim(s);
      const k = { fresh: uniq('eff'), done: uniq('eff'), busy: uniq('eff'), dead: uniq('eff'), lost: uniq('eff'), again: uniq('eff'), own: uniq('eff'), bad: uniq('eff') };
      const ours = (key: string) => ({ key, jobId: a.id, leaseToken: a.leaseToken });
      // done by `a` earlier; pending under `other`, which still runs; pending under our own token
      assert.deepEqual(await s.effects.reserve(ours(k.done)), { state: 'reserved' });
      assert.equal(await s.effects.complete({ ...ours(k.done), result: { sent: 1 } }), true);
      assert.deepEqual(await s.effects.reserve({ key: k.busy, jobId: other.id, leaseToken: other.leaseToken }), { state: 'reserved' });
      assert.deepEqual(await s.effects.reserve(ours(k.own)), { state: 'reserved' });
      // pending under an attempt that died: its job is claimed again by `again`
      const first = await insertAndClaim(s);
      assert.deepEqual(await s.effects.reserve({ key: k.dead, jobId: first.id, leaseToken: first.leaseToken }), { state: 'reserved' });
      await finish(s, first, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'lease_expired' } });
      const again = await claimOne(s, first.type);
      const theirs = (key: string) => ({ key, jobId: again.id, leaseToken: again.leaseToken });

      const asked = [
        ours(k.fresh),
        ours(k.done),
        ours(k.busy),
        theirs(k.dead),
        { key: k.lost, jobId: a.id, leaseToken: WRONG_TOKEN },
        theirs(k.again),
        { key: k.bad, jobId: 'not-an-id', leaseToken: a.leaseToken },
        ours(k.own),
      ];
      assert.deepEqual(await b.reserveMany({ items: asked }), [
        { state: 'reserved' },
        { state: 'done', result: { sent: 1 } },
        { state: 'busy' },
        { state: 'reserved' },
        { state: 'lost' },
        { state: 'reserved' },
        { state: 'lost' },
        { state: 'reserved' },
      ]);

      const recorded = await b.completeMany({ items: [
        { ...ours(k.fresh), result: 'fresh' },
        { ...ours(k.busy), result: 'not ours' },
        { ...theirs(k.dead), result: { by: 'again' } },
        { key: k.lost, jobId: a.id, leaseToken: WRONG_TOKEN, result: 'stale' },
        { ...ours(k.own), result: null },
        { ...ours(k.again), result: 'reserved by the other job' },
        { key: k.bad, jobId: 'not-an-id', leaseToken: a.leaseToken, result: 1 },
      ] });
      assert.deepEqual(recorded, [true, false, true, false, true, false, false]);
      // what the ledger holds now, as a later attempt sees it
      assert.deepEqual(await s.effects.reserve(theirs(k.dead)), { state: 'done', result: { by: 'again' } });
      assert.deepEqual(await s.effects.reserve(ours(k.fresh)), { state: 'done', result: 'fresh' });
      assert.deepEqual(await s.effects.reserve(ours(k.own)), { state: 'done', result: null });
      assert.deepEqual(await s.effects.reserve(ours(k.busy)), { state: 'busy' }, 'still pending under the other job');
      assert.deepEqual(await s.effects.reserve(theirs(k.again)), { state: 'reserved' }, 'still pending, ours to complete');
      assert.equal((await s.effects.list({ jobId: first.id, limit: 10 })).find((e) => e.key === k.dead)?.state, 'done');
    });

    it('a key twice in one batch is refused before anything is written; an empty batch is empty', async (t) => {
      const s = db.storage;
      const b = batchedOr(t, s, h.name);
      if (!b) return;
      const a = await insertAndClaim(s);
      const key = uniq('eff');
      const p = { key, jobId: a.id, leaseToken: a.leaseToken };
      const before = await s.effects.count();
      await assert.rejects(b.reserveMany({ items: [p, { key: uniq('eff'), jobId: a.id, leaseToken: a.leaseToken }, p] }), { code: 'INVALID_OPTION' });
      assert.equal(await s.effects.count(), before, 'nothing reserved');
      assert.deepEqual(await b.reserveMany({ items: [p] }), [{ state: 'reserved' }]);
      await assert.rejects(b.completeMany({ items: [{ ...p, result: 1 }, { ...p, result: 2 }] }), { code: 'INVALID_OPTION' });
      assert.equal((await s.effects.list({ jobId: a.id, limit: 10 }))[0]?.state, 'pending', 'nothing recorded');
      assert.deepEqual(await b.reserveMany({ items: [] }), []);
      assert.deepEqual(await b.completeMany({ items: [] }), []);
    });

    it('two connections reserving the same new keys in opposite orders: no deadlock, one holder per key', async (t) => {
      const s1 = db.storage;
      const b1 = batchedOr(t, s1, h.name);
      if (!b1) return;
      const s2 = await db.connectAnother();
      const b2 = batchedOr(t, s2, h.name)!;
      const a = await insertAndClaim(s1);
      const c = await insertAndClaim(s1);
      for (let round = 0; round < 15; round++) {
        const keys = Array.from({ length: 300 }, () => uniq('race'));
        const [ra, rc] = await Promise.all([
          b1.reserveMany({ items: keys.map((key) => ({ key, jobId: a.id, leaseToken: a.leaseToken })) }),
          b2.reserveMany({ items: [...keys].reverse().map((key) => ({ key, jobId: c.id, leaseToken: c.leaseToken })) }),
        ]);
        const rcInKeyOrder = [...rc].reverse();
        keys.forEach((key, i) => {
          const pair = [ra[i]?.state, rcInKeyOrder[i]?.state].sort();
          assert.deepEqual(pair, ['busy', 'reserved'], `round ${round}, ${key}: one job holds it, the other is told busy`);
        });
      }
    });

    it('a record batch and a reserve batch over the same keys, in opposite orders: no deadlock', async (t) => {
      const s1 = db.storage;
      const b1 = batchedOr(t, s1, h.name);
      if (!b1) return;
      const b2 = batchedOr(t, await db.connectAnother(), h.name)!;
      const a = await insertAndClaim(s1);
      const c = await insertAndClaim(s1);
      for (let round = 0; round < 10; round++) {
        const keys = Array.from({ length: 300 }, () => uniq('rr'));
        const ours = keys.map((key) => ({ key, jobId: a.id, leaseToken: a.leaseToken }));
        assert.ok((await b1.reserveMany({ items: ours })).every((r) => r.state === 'reserved'));
        // a's records run from the last key down while c asks for every key from the first up
        const [recorded, asked] = await Promise.all([
          b1.completeMany({ items: [...ours].reverse().map((p) => ({ ...p, result: p.key })) }),
          b2.reserveMany({ items: keys.map((key) => ({ key, jobId: c.id, leaseToken: c.leaseToken })) }),
        ]);
        assert.ok(recorded.every(Boolean), `round ${round}: every record landed`);
        asked.forEach((r, i) => {
          // before a's records commit the key is busy (a still runs); after, done with a's result
          if (r.state !== 'busy') assert.deepEqual(r, { state: 'done', result: keys[i] }, `round ${round}, ${keys[i]}`);
        });
      }
    });
  });
}
