/** leases.finish: fencing, every status, run_at, uncounted attempts, error fields, attempt rows. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, assertBetween, claimOne, finish, finishOf, insertAndClaim, mustGet, sleep, useDb } from './helpers.js';

const ERR = { code: 'E_BOOM', message: 'it went boom', stack: 'Error: it went boom\n    at handler (x.ts:1:1)' };

export function finishTests(h: ConformanceHarness): void {
  describe('leases.finish', () => {
    const db = useDb(h);

    it('succeeded: sets status and finished_at, clears the lease, keeps run_at and attempts, closes the attempt', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { workerId: 'w-fin' });
      await sleep(25);
      const t0 = (await s.now()).getTime();
      await finish(s, c);
      const t1 = (await s.now()).getTime();
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'succeeded');
      assertBetween(j.finishedAt!.getTime(), t0, t1, 'finishedAt');
      assert.equal(j.lockedBy, null);
      assert.equal(j.leaseToken, null);
      assert.equal(j.lockedUntil, null);
      assert.equal(j.attempts, 1);
      assert.equal(j.runAt.getTime(), c.runAt.getTime(), 'run_at untouched without runAfterMs');
      assert.equal(j.lastErrorCode, null);
      assert.equal(j.lastError, null);
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'succeeded');
      assertBetween(a!.finishedAt!.getTime(), t0, t1, 'attempt finishedAt');
      assert.equal(a!.finishedAt!.getTime(), j.finishedAt!.getTime(), 'the attempt ends when the job does');
      assert.equal(a!.durationMs, a!.finishedAt!.getTime() - a!.startedAt.getTime());
      assert.ok(a!.durationMs! >= 20, `duration ${a!.durationMs} covers the 25 ms sleep`);
      assert.equal(a!.errorCode, null);
      assert.equal(a!.errorMessage, null);
      assert.equal(a!.errorStack, null);
      assert.equal(a!.retryDelayMs, null);
      assert.equal(a!.workerId, 'w-fin');
    });

    it('failed: run_at = now + runAfterMs, error recorded on job and attempt, finished_at null', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const t0 = (await s.now()).getTime();
      await finish(s, c, { status: 'failed', runAfterMs: 7_000, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 7_000 } });
      const t1 = (await s.now()).getTime();
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'failed');
      assertBetween(j.runAt.getTime(), t0 + 7_000, t1 + 7_000, 'runAt');
      assert.equal(j.finishedAt, null);
      assert.equal(j.attempts, 1);
      assert.equal(j.lastErrorCode, 'E_BOOM');
      assert.equal(j.lastError, 'it went boom');
      assert.equal(j.leaseToken, null);
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'failed');
      assert.equal(a!.errorCode, 'E_BOOM');
      assert.equal(a!.errorMessage, 'it went boom');
      assert.equal(a!.errorStack, ERR.stack);
      assert.equal(a!.retryDelayMs, 7_000);
      assert.deepEqual(await s.leases.claim({ workerId: 'w', types: [c.type], queues: null, limit: 1, leaseMs: 1000 }), [], 'not due yet');
    });

    it('dead and cancelled: terminal, finished_at set; error without a stack stores null', async () => {
      const s = db.storage;
      for (const status of ['dead', 'cancelled'] as const) {
        const c = await insertAndClaim(s);
        const err = { code: status.toUpperCase(), message: `now ${status}` };
        const t0 = (await s.now()).getTime();
        await finish(s, c, { status, error: err, attempt: { outcome: status, error: err } });
        const t1 = (await s.now()).getTime();
        const j = await mustGet(s, c.id);
        assert.equal(j.status, status);
        assertBetween(j.finishedAt!.getTime(), t0, t1, `${status} finishedAt`);
        assert.equal(j.lastErrorCode, err.code);
        const [a] = await s.attempts.list({ jobId: c.id });
        assert.equal(a!.outcome, status);
        assert.equal(a!.errorCode, err.code);
        assert.equal(a!.errorStack, null);
      }
    });

    it('queued with uncountAttempt (snooze / hand-back): attempts - 1, run_at from runAfterMs', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const t0 = (await s.now()).getTime();
      await finish(s, c, { status: 'queued', runAfterMs: 2_000, uncountAttempt: true, attempt: { outcome: 'snoozed', retryDelayMs: 2_000 } });
      const t1 = (await s.now()).getTime();
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'queued');
      assert.equal(j.attempts, 0);
      assert.equal(j.finishedAt, null);
      assertBetween(j.runAt.getTime(), t0 + 2_000, t1 + 2_000, 'runAt');
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'snoozed');
      assert.equal(a!.retryDelayMs, 2_000);

      const back = await insertAndClaim(s);
      await finish(s, back, { status: 'queued', runAfterMs: 0, uncountAttempt: true, attempt: { outcome: 'handed_back' } });
      const again = await claimOne(s, back.type);
      assert.equal(again.attempts, 1, 'the handed-back attempt was not counted');
    });

    it('a null or missing error leaves last_error as it was', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      await finish(s, c, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR } });
      const c2 = await claimOne(s, c.type);
      await finish(s, c2, { status: 'failed', runAfterMs: 0, error: null, attempt: { outcome: 'failed' } });
      const c3 = await claimOne(s, c.type);
      await finish(s, c3);
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'succeeded');
      assert.equal(j.lastErrorCode, 'E_BOOM');
      assert.equal(j.lastError, 'it went boom');
      assert.equal(j.attempts, 3);
    });

    it('fencing: a wrong token changes nothing', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const before = await mustGet(s, c.id);
      const res = await s.leases.finish({ items: [finishOf(c, { leaseToken: WRONG_TOKEN, status: 'dead', error: ERR, attempt: { outcome: 'dead', error: ERR } })] });
      assert.deepEqual(res, [{ id: c.id, applied: false }]);
      assert.deepEqual(await mustGet(s, c.id), before);
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'running');
      assert.equal(a!.finishedAt, null);
    });

    it('fencing: a finished job cannot be finished again with its old token', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      await finish(s, c, { status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'failed' } });
      const before = await mustGet(s, c.id);
      assert.deepEqual(await s.leases.finish({ items: [finishOf(c)] }), [{ id: c.id, applied: false }]);
      assert.deepEqual(await mustGet(s, c.id), before);
      assert.equal((await s.attempts.list({ jobId: c.id }))[0]!.outcome, 'failed');
    });

    it('a batch mixing applied and rejected items reports each, in input order', async () => {
      const s = db.storage;
      const a = await insertAndClaim(s);
      const b = await insertAndClaim(s);
      const c = await insertAndClaim(s);
      const res = await s.leases.finish({ items: [
        finishOf(c),
        finishOf(b, { leaseToken: WRONG_TOKEN }),
        finishOf(a, { status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }),
        finishOf({ id: '987654321', leaseToken: WRONG_TOKEN }),
        finishOf(c, { status: 'dead', attempt: { outcome: 'dead' } }),
      ] });
      assert.deepEqual(res, [
        { id: c.id, applied: true },
        { id: b.id, applied: false },
        { id: a.id, applied: true },
        { id: '987654321', applied: false },
        { id: c.id, applied: false },
      ]);
      assert.equal((await mustGet(s, a.id)).status, 'failed');
      assert.equal((await mustGet(s, b.id)).status, 'running');
      assert.equal((await mustGet(s, c.id)).status, 'succeeded');
      assert.deepEqual(await s.leases.finish({ items: [] }), []);
      // a job named first with a stale token, then with its lease: the second lands
      const d = await insertAndClaim(s);
      const stale = await s.leases.finish({ items: [finishOf(d, { leaseToken: WRONG_TOKEN }), finishOf(d)] });
      assert.deepEqual(stale, [{ id: d.id, applied: false }, { id: d.id, applied: true }]);
      assert.equal((await mustGet(s, d.id)).status, 'succeeded');
    });

    it('only the attempt row of this lease is closed', async () => {
      const s = db.storage;
      const c1 = await insertAndClaim(s);
      await finish(s, c1, { status: 'failed', runAfterMs: 0, error: ERR, attempt: { outcome: 'failed', error: ERR, retryDelayMs: 0 } });
      const c2 = await claimOne(s, c1.type);
      await finish(s, c2, { status: 'dead', attempt: { outcome: 'dead' } });
      const rows = await s.attempts.list({ jobId: c1.id });
      assert.deepEqual(rows.map((r) => [r.attempt, r.outcome, r.errorCode, r.retryDelayMs]), [
        [1, 'failed', 'E_BOOM', 0],
        [2, 'dead', null, null],
      ]);
    });
  });
}
