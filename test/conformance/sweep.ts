/** leases.findExpired and the sweeper's guarded finish (onlyIfExpired). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideRescue } from '../../src/core/decide.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, finishOf, insertAndClaim, mustGet, newJob, sleep, uniq, useDb } from './helpers.js';

const POLICY = { kind: 'fixed', delayMs: 0 } as const;

export function sweepTests(h: ConformanceHarness): void {
  describe('expired leases', () => {
    const db = useDb(h);

    it('leases.findExpired lists running jobs with locked_until < now, oldest first, up to limit', async () => {
      const s = db.storage;
      const late = await insertAndClaim(s, { leaseMs: 150, workerId: 'w-late', job: { maxAttempts: 7 } });
      const early = await insertAndClaim(s, { leaseMs: 30, workerId: 'w-early' });
      const live = await insertAndClaim(s, { leaseMs: 60_000 });
      const done = await insertAndClaim(s, { leaseMs: 30 });
      await finish(s, done);
      await sleep(200);
      const found = (await s.leases.findExpired({ limit: 1000 })).filter((e) => [late.id, early.id, live.id, done.id].includes(e.id));
      assert.deepEqual(found, [
        { id: early.id, type: early.type, leaseToken: early.leaseToken, lockedBy: 'w-early', attempts: 1, maxAttempts: 3 },
        { id: late.id, type: late.type, leaseToken: late.leaseToken, lockedBy: 'w-late', attempts: 1, maxAttempts: 7 },
      ]);
      const one = await s.leases.findExpired({ limit: 1 });
      assert.equal(one.length, 1);
    });

    it('leases.findExpired with types lists only those types: a full page of other types does not hide them', async () => {
      const s = db.storage;
      const other = uniq('other');
      const mine = uniq('mine');
      const also = uniq('also');
      // the oldest expired leases are all of a type the caller does not handle
      await s.jobs.insert({ jobs: Array.from({ length: 3 }, () => newJob(other)) });
      await s.leases.claim({ workerId: 'w-other', types: [other], queues: null, limit: 3, leaseMs: 20 });
      await sleep(40);
      await s.jobs.insert({ jobs: [newJob(mine), newJob(also)] });
      const [m] = await s.leases.claim({ workerId: 'w-mine', types: [mine], queues: null, limit: 1, leaseMs: 30 });
      const [a] = await s.leases.claim({ workerId: 'w-also', types: [also], queues: null, limit: 1, leaseMs: 40 });
      assert.ok(m && a);
      await sleep(80);
      const found = await s.leases.findExpired({ limit: 3, types: [mine, also] });
      assert.deepEqual(found.map((e) => [e.id, e.type]), [
        [m.id, mine],
        [a.id, also],
      ]);
      assert.deepEqual((await s.leases.findExpired({ limit: 1, types: [also] })).map((e) => e.id), [a.id]);
      assert.deepEqual(await s.leases.findExpired({ limit: 10, types: [] }), [], 'no types: nothing');
      const all = (await s.leases.findExpired({ limit: 1000 })).filter((e) => [other, mine, also].includes(e.type));
      assert.equal(all.length, 5, 'without types: every type');
    });

    it('onlyIfExpired rejects a lease that has not expired', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 60_000 });
      const res = await s.leases.finish({ items: [finishOf(c, { status: 'failed', runAfterMs: 0, onlyIfExpired: true, attempt: { outcome: 'lease_expired' } })] });
      assert.deepEqual(res, [{ id: c.id, applied: false }]);
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'running');
      assert.equal(j.leaseToken, c.leaseToken);
    });

    it('onlyIfExpired lands on an expired lease; the zombie then loses every write', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 40, workerId: 'zombie' });
      await sleep(80);
      const [lease] = (await s.leases.findExpired({ limit: 1000 })).filter((e) => e.id === c.id);
      assert.ok(lease, 'the expired lease is found');
      const decision = decideRescue(lease, 'retry', POLICY, () => 0);
      const res = await s.leases.finish({ items: [{ id: lease.id, leaseToken: lease.leaseToken, ...decision }] });
      assert.deepEqual(res, [{ id: c.id, applied: true }]);
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'failed');
      assert.equal(j.lastErrorCode, 'LEASE_EXPIRED');
      assert.equal(j.leaseToken, null);
      const [a] = await s.attempts.list({ jobId: c.id });
      assert.equal(a!.outcome, 'lease_expired');
      assert.equal(a!.errorCode, 'LEASE_EXPIRED');
      assert.ok(a!.finishedAt);

      const again = await claimOne(s, c.type, 60_000, 'rescuer');
      assert.equal(again.attempts, 2);
      // the paused worker wakes up: nothing it writes lands
      assert.deepEqual(await s.leases.finish({ items: [finishOf(c)] }), [{ id: c.id, applied: false }]);
      assert.deepEqual(await s.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 }), {
        lost: [{ id: c.id, status: 'running' }],
      });
      assert.deepEqual(await s.effects.reserve({ key: `zombie-${c.id}`, jobId: c.id, leaseToken: c.leaseToken }), { state: 'lost' });
      const now = await mustGet(s, c.id);
      assert.equal(now.leaseToken, again.leaseToken);
      assert.equal(now.lockedBy, 'rescuer');
    });

    it('onlyIfExpired to dead (onLeaseExpired: fail) sets finished_at', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 30 });
      await sleep(60);
      const lease = (await s.leases.findExpired({ limit: 1000 })).find((e) => e.id === c.id)!;
      await finish(s, c, decideRescue(lease, 'fail', POLICY, () => 0));
      const j = await mustGet(s, c.id);
      assert.equal(j.status, 'dead');
      assert.ok(j.finishedAt);
      assert.ok(!(await s.leases.findExpired({ limit: 1000 })).some((e) => e.id === c.id));
    });

    it('a heartbeat that lands first makes the rescue miss', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 40 });
      await sleep(80);
      const lease = (await s.leases.findExpired({ limit: 1000 })).find((e) => e.id === c.id)!;
      assert.deepEqual((await s.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 })).lost, []);
      const res = await s.leases.finish({ items: [{ id: lease.id, leaseToken: lease.leaseToken, ...decideRescue(lease, 'retry', POLICY, () => 0) }] });
      assert.deepEqual(res, [{ id: c.id, applied: false }]);
      assert.equal((await mustGet(s, c.id)).status, 'running');
    });
  });
}
