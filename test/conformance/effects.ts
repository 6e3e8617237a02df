/**
 * The effect ledger behind ctx.once: reserve, complete, take over, fencing. Every scenario runs
 * twice: through effects.reserve/complete, and through the batched reserveMany/
 * completeMany with one item (skipped where the adapter has no batched calls), since each
 * item of a batch must be answered as if it had been asked alone.
 */
import assert from 'node:assert/strict';
import { describe, it as itTest } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { effectBatchTests } from './effects-batch.js';
import { WRONG_TOKEN, assertBetween, claimOne, finish, insertAndClaim, newJob, sleep, uniq, useDb } from './helpers.js';

const RESULT = { messageId: 'm-42', recipients: ['a@b.c', 'ü@ñ.de'], nested: { ok: true, n: 3.5 } };

/** The storage with effects.reserve/complete answered by one-item batches. */
function viaBatches(s: Storage): Storage {
  const effects = s.effects;
  const single: Storage['effects'] = {
    reserve: async (p) => (await effects.reserveMany!({ items: [p] }))[0]!,
    complete: async (p) => (await effects.completeMany!({ items: [p] }))[0]!,
    get: (p) => effects.get(p),
    list: (p) => effects.list(p),
    count: () => effects.count(),
  };
  return new Proxy(s, {
    get(target, prop) {
      if (prop === 'effects') return single;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

export function effectTests(h: ConformanceHarness): void {
  for (const batched of [false, true]) effectScenarios(h, batched);
  effectBatchTests(h);
}

function effectScenarios(h: ConformanceHarness, batched: boolean): void {
  describe(batched ? 'effects, through one-item batches' : 'effects', () => {
    const raw = useDb(h);
    const db = {
      get storage(): Storage {
        return batched ? viaBatches(raw.storage) : raw.storage;
      },
    };
    // a plain `it` when asked one at a time; skipped where the adapter has no batched calls
    const it = (name: string, fn: () => Promise<void>) =>
      itTest(name, async (t) => {
        if (batched && (!raw.storage.effects.reserveMany || !raw.storage.effects.completeMany)) return t.skip(`${h.name} has no batched effect calls`);
        await fn();
      });

    it('effects.reserve is lost unless the job is running under this token', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const key = uniq('eff');
      assert.deepEqual(await s.effects.reserve({ key, jobId: c.id, leaseToken: WRONG_TOKEN }), { state: 'lost' });
      assert.deepEqual(await s.effects.reserve({ key, jobId: '987654321', leaseToken: c.leaseToken }), { state: 'lost' });
      const [q] = await s.jobs.insert({ jobs: [newJob(uniq('eff-job'))] });
      assert.deepEqual(await s.effects.reserve({ key, jobId: q!.job.id, leaseToken: c.leaseToken }), { state: 'lost' }, 'queued job');
      await finish(s, c);
      assert.deepEqual(await s.effects.reserve({ key, jobId: c.id, leaseToken: c.leaseToken }), { state: 'lost' }, 'finished job');
      assert.equal((await s.effects.list({ jobId: c.id, limit: 10 })).length, 0, 'nothing recorded');
      assert.equal(await s.effects.complete({ key, jobId: c.id, leaseToken: c.leaseToken, result: 1 }), false);
    });

    it('reserve → complete → done with its result, for this attempt and the next', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const key = uniq('eff');
      const p = { key, jobId: c.id, leaseToken: c.leaseToken };
      const t0 = (await s.now()).getTime();
      assert.deepEqual(await s.effects.reserve(p), { state: 'reserved' });
      assert.deepEqual(await s.effects.reserve(p), { state: 'reserved' }, 'pending under this token: still ours');
      const [pending] = await s.effects.list({ jobId: c.id, limit: 10 });
      assert.equal(pending?.state, 'pending');
      assert.equal(pending?.doneAt, null);
      assert.equal(await s.effects.complete({ ...p, result: RESULT }), true);
      const t1 = (await s.now()).getTime();
      assert.deepEqual(await s.effects.reserve(p), { state: 'done', result: RESULT });

      const [row] = await s.effects.list({ jobId: c.id, limit: 10 });
      assert.equal(row!.key, key);
      assert.equal(row!.jobId, c.id);
      assert.equal(row!.state, 'done');
      assert.deepEqual(row!.result, RESULT);
      assertBetween(row!.createdAt.getTime(), t0, t1, 'createdAt');
      assertBetween(row!.doneAt!.getTime(), t0, t1, 'doneAt');

      await finish(s, c, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } });
      const c2 = await claimOne(s, c.type);
      assert.deepEqual(await s.effects.reserve({ key, jobId: c2.id, leaseToken: c2.leaseToken }), { state: 'done', result: RESULT });
    });

    it('a pending row left by a dead attempt is taken over; the stale token cannot complete it', async () => {
      const s = db.storage;
      const c1 = await insertAndClaim(s);
      const key = uniq('eff');
      assert.deepEqual(await s.effects.reserve({ key, jobId: c1.id, leaseToken: c1.leaseToken }), { state: 'reserved' });
      // the attempt dies before completing; the job comes back and is claimed again
      await finish(s, c1, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'lease_expired' } });
      const c2 = await claimOne(s, c1.type);
      assert.deepEqual(await s.effects.reserve({ key, jobId: c2.id, leaseToken: c2.leaseToken }), { state: 'reserved' });
      assert.equal(await s.effects.complete({ key, jobId: c1.id, leaseToken: c1.leaseToken, result: { by: 'zombie' } }), false);
      assert.equal(await s.effects.complete({ key, jobId: c2.id, leaseToken: c2.leaseToken, result: { by: 'second' } }), true);
      assert.deepEqual(await s.effects.reserve({ key, jobId: c2.id, leaseToken: c2.leaseToken }), { state: 'done', result: { by: 'second' } });
      const rows = await s.effects.list({ jobId: c1.id, limit: 10 });
      assert.equal(rows.length, 1, 'one row per key');
    });

    it('a key pending under another live job is busy, not taken over; free again once that job ends', async () => {
      const s = db.storage;
      const a = await insertAndClaim(s);
      const b = await insertAndClaim(s);
      const key = uniq('eff');
      assert.deepEqual(await s.effects.reserve({ key, jobId: a.id, leaseToken: a.leaseToken }), { state: 'reserved' });
      assert.deepEqual(await s.effects.reserve({ key, jobId: b.id, leaseToken: b.leaseToken }), { state: 'busy' });
      const [row] = await s.effects.list({ jobId: a.id, limit: 10 });
      assert.equal(row?.jobId, a.id, 'still held by the first job');
      await finish(s, a, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      assert.deepEqual(await s.effects.reserve({ key, jobId: b.id, leaseToken: b.leaseToken }), { state: 'reserved' }, 'holder gone: taken over');
      assert.equal(await s.effects.complete({ key, jobId: b.id, leaseToken: b.leaseToken, result: 'b' }), true);
    });

    it('effects.complete is fenced: stale token after a re-claim, or no reservation, is rejected', async () => {
      const s = db.storage;
      const c1 = await insertAndClaim(s);
      const key = uniq('eff');
      assert.equal(await s.effects.complete({ key, jobId: c1.id, leaseToken: c1.leaseToken, result: 1 }), false, 'no reservation');
      assert.deepEqual(await s.effects.reserve({ key, jobId: c1.id, leaseToken: c1.leaseToken }), { state: 'reserved' });
      await finish(s, c1, { status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'handed_back' } });
      const c2 = await claimOne(s, c1.type);
      // c2 holds the job but has not reserved the key: c1's pending row is still under c1's token
      assert.equal(await s.effects.complete({ key, jobId: c1.id, leaseToken: c1.leaseToken, result: 1 }), false, 'stale lease');
      assert.equal(await s.effects.complete({ key, jobId: c2.id, leaseToken: c2.leaseToken, result: 2 }), false, 'not reserved by c2');
      const [row] = await s.effects.list({ jobId: c1.id, limit: 10 });
      assert.equal(row!.state, 'pending');
    });

    it('effects.get reads one key exactly: none, pending, done with its result', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const key = `${uniq('eff')}-Key`;
      assert.equal(await s.effects.get({ key }), null, 'nothing under the key yet');
      await s.effects.reserve({ key, jobId: c.id, leaseToken: c.leaseToken });
      const pending = await s.effects.get({ key });
      assert.deepEqual([pending?.key, pending?.jobId, pending?.state, pending?.doneAt], [key, c.id, 'pending', null]);
      assert.ok(pending?.createdAt instanceof Date);
      assert.equal(await s.effects.complete({ key, jobId: c.id, leaseToken: c.leaseToken, result: RESULT }), true);
      const done = await s.effects.get({ key });
      assert.deepEqual([done?.key, done?.jobId, done?.state, done?.result], [key, c.id, 'done', RESULT]);
      assert.ok(done?.doneAt instanceof Date);
      // keys are exact: another case is another key
      assert.equal(await s.effects.get({ key: key.toLowerCase() }), null, 'case');
      // a trailing space is another key where the ledger's unique key says so (MySQL before
      // 8.0.17 compares keys padded): effects.get finds what the ledger holds under it, either way
      const spaced = `${key} `;
      const r = await s.effects.reserve({ key: spaced, jobId: c.id, leaseToken: c.leaseToken });
      const got = await s.effects.get({ key: spaced });
      if (r.state === 'reserved') assert.deepEqual([got?.key, got?.state], [spaced, 'pending'], 'its own row');
      else assert.deepEqual([r, got?.key], [{ state: 'done', result: RESULT }, key], 'the same key as the done one');
    });

    it('effects.count and effects.list (by job, limit)', async () => {
      const s = db.storage;
      const before = await s.effects.count();
      const a = await insertAndClaim(s);
      const b = await insertAndClaim(s);
      const keysA = [uniq('eff'), uniq('eff'), uniq('eff')];
      for (const key of keysA) await s.effects.reserve({ key, jobId: a.id, leaseToken: a.leaseToken });
      await s.effects.reserve({ key: uniq('eff'), jobId: b.id, leaseToken: b.leaseToken });
      assert.equal(await s.effects.count(), before + 4);
      const listed = await s.effects.list({ jobId: a.id, limit: 10 });
      assert.deepEqual(listed.map((e) => e.key).sort(), [...keysA].sort());
      assert.ok(listed.every((e) => e.jobId === a.id && e.state === 'pending'));
      assert.equal((await s.effects.list({ jobId: a.id, limit: 2 })).length, 2);
      // newest first: three more, a few milliseconds apart (PostgreSQL orders by creation time)
      const later: string[] = [];
      for (let i = 0; i < 3; i++) {
        await sleep(5);
        later.push(uniq('eff'));
        await s.effects.reserve({ key: later[i]!, jobId: a.id, leaseToken: a.leaseToken });
      }
      assert.deepEqual((await s.effects.list({ jobId: a.id, limit: 2 })).map((e) => e.key), [later[2], later[1]], 'the newest two');
      assert.equal((await s.effects.list({ limit: 3 })).length, 3);
      assert.ok((await s.effects.list({ limit: 1000 })).length >= 4);
    });
  });
}
