/** Operator actions: jobs.retry and jobs.cancel from every status. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobStatus } from '../../src/core/status.js';
import type { ClaimedJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { assertBetween, claimOne, finish, finishOf, insertAndClaim, mustGet, newJob, uniq, useDb } from './helpers.js';

const ERR = { code: 'E_X', message: 'x' };

/** A job of a fresh type in `status`; `lease` is set for running jobs. Queued/failed: due only if `due`. */
export async function jobIn(s: Storage, status: Exclude<JobStatus, 'waiting'>, due = false): Promise<{ id: string; type: string; lease: ClaimedJob | null }> {
  const delay = due ? 0 : 60_000;
  if (status === 'queued') {
    const type = uniq('adm');
    const [r] = await s.jobs.insert({ jobs: [newJob(type, { runAfterMs: delay })] });
    return { id: r!.job.id, type, lease: null };
  }
  const c = await insertAndClaim(s);
  if (status === 'running') return { id: c.id, type: c.type, lease: c };
  if (status === 'failed') await finish(s, c, { status, runAfterMs: delay, error: ERR, attempt: { outcome: 'failed', error: ERR } });
  else await finish(s, c, { status, error: ERR, attempt: { outcome: status === 'succeeded' ? 'succeeded' : status, error: ERR } });
  return { id: c.id, type: c.type, lease: null };
}

export function adminTests(h: ConformanceHarness): void {
  describe('jobs.retry', () => {
    const db = useDb(h);

    for (const status of ['queued', 'failed', 'dead', 'cancelled'] as const) {
      it(`from ${status}: → queued, due now, attempts 0, lease and finished_at cleared`, async () => {
        const s = db.storage;
        const j = await jobIn(s, status);
        const t0 = (await s.now()).getTime();
        const res = await s.jobs.retry({ id: j.id });
        const t1 = (await s.now()).getTime();
        assert.equal(res.applied, true);
        const after = await mustGet(s, j.id);
        assert.deepEqual(res.job, after, 'returns the row as it is afterwards');
        assert.equal(after.status, 'queued');
        assertBetween(after.runAt.getTime(), t0, t1, 'runAt');
        assert.equal(after.attempts, 0);
        assert.equal(after.finishedAt, null);
        assert.equal(after.lockedBy, null);
        assert.equal(after.leaseToken, null);
        assert.equal(after.lockedUntil, null);
        const c = await claimOne(s, j.type);
        assert.equal(c.id, j.id);
        assert.equal(c.attempts, 1);
      });
    }

    for (const status of ['running', 'succeeded'] as const) {
      it(`from ${status}: not applied, nothing changes`, async () => {
        const s = db.storage;
        const j = await jobIn(s, status);
        const before = await mustGet(s, j.id);
        const res = await s.jobs.retry({ id: j.id });
        assert.deepEqual(res, { job: before, applied: false });
        assert.deepEqual(await mustGet(s, j.id), before);
      });
    }

    it('an unknown job: { job: null, applied: false }', async () => {
      assert.deepEqual(await db.storage.jobs.retry({ id: '987654321' }), { job: null, applied: false });
    });
  });

  describe('jobs.cancel', () => {
    const db = useDb(h);

    for (const status of ['queued', 'failed'] as const) {
      it(`from ${status}: → cancelled, finished_at now, last_error_code CANCELLED, never claimed`, async () => {
        const s = db.storage;
        const j = await jobIn(s, status, true); // due, so "never claimed" means something
        assert.equal((await mustGet(s, j.id)).status, status);
        const t0 = (await s.now()).getTime();
        const res = await s.jobs.cancel({ id: j.id });
        const t1 = (await s.now()).getTime();
        assert.equal(res.applied, true);
        const after = await mustGet(s, j.id);
        assert.deepEqual(res.job, after);
        assert.equal(after.status, 'cancelled');
        assertBetween(after.finishedAt!.getTime(), t0, t1, 'finishedAt');
        assert.equal(after.lastErrorCode, 'CANCELLED');
        assert.deepEqual(await s.leases.claim({ workerId: 'w', types: [j.type], queues: null, limit: 5, leaseMs: 1000 }), []);
      });
    }

    it('from running: the lease is gone, the attempt closes as cancelled, heartbeat and finish are rejected', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s);
      const res = await s.jobs.cancel({ id: c.id });
      assert.equal(res.applied, true);
      const after = await mustGet(s, c.id);
      assert.equal(after.status, 'cancelled');
      assert.equal(after.lockedBy, null);
      assert.equal(after.leaseToken, null);
      assert.equal(after.lockedUntil, null);
      assert.equal(after.lastErrorCode, 'CANCELLED');
      assert.ok(after.finishedAt);
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'cancelled');
      assert.ok(a!.finishedAt);
      assert.equal(typeof a!.durationMs, 'number');

      const hb = await s.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 });
      assert.deepEqual(hb, { lost: [{ id: c.id, status: 'cancelled' }] });
      assert.deepEqual(await s.leases.finish({ items: [finishOf(c)] }), [{ id: c.id, applied: false }]);
      assert.equal((await mustGet(s, c.id)).status, 'cancelled');
      assert.equal((await s.attempts.list({ jobId: c.id }))[0]!.outcome, 'cancelled');
      assert.deepEqual(await s.effects.reserve({ key: uniq('eff'), jobId: c.id, leaseToken: c.leaseToken }), { state: 'lost' });
    });

    for (const status of ['succeeded', 'dead', 'cancelled'] as const) {
      it(`from ${status}: not applied, nothing changes`, async () => {
        const s = db.storage;
        const j = await jobIn(s, status);
        const before = await mustGet(s, j.id);
        assert.deepEqual(await s.jobs.cancel({ id: j.id }), { job: before, applied: false });
        assert.deepEqual(await mustGet(s, j.id), before);
      });
    }

    it('an unknown job: { job: null, applied: false }; a cancelled job comes back with jobs.retry', async () => {
      const s = db.storage;
      assert.deepEqual(await s.jobs.cancel({ id: '987654321' }), { job: null, applied: false });
      const j = await jobIn(s, 'queued');
      await s.jobs.cancel({ id: j.id });
      assert.equal((await s.jobs.retry({ id: j.id })).applied, true);
      assert.equal((await claimOne(s, j.type)).id, j.id);
    });
  });
}
