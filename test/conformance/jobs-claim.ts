/** leases.claim and heartbeat: which rows are due, in which order, what a claim sets. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ConformanceHarness } from './index.js';
import { WRONG_TOKEN, assertBetween, claimOne, finish, insertAndClaim, insertN, mustGet, newJob, sleep, uniq, useDb } from './helpers.js';

export function claimTests(h: ConformanceHarness): void {
  describe('leases.claim', () => {
    const db = useDb(h);

    it('claims only due rows: run_at <= now', async () => {
      const s = db.storage;
      const type = uniq('claim');
      const now = (await s.now()).getTime();
      const res = await s.jobs.insert({ jobs: [
        newJob(type, { runAfterMs: 60_000, payload: 'later' }),
        newJob(type, { runAt: new Date(now + 60_000), payload: 'runAt future' }),
        newJob(type, { runAt: new Date(now - 60_000), payload: 'runAt past' }),
        newJob(type, { payload: 'now' }),
      ] });
      const claimed = await s.leases.claim({ workerId: 'w1', types: [type], queues: null, limit: 10, leaseMs: 30_000 });
      assert.deepEqual(claimed.map((c) => c.id).sort(), [res[2]!.job.id, res[3]!.job.id].sort());
      assert.equal((await mustGet(s, res[0]!.job.id)).status, 'queued');
    });

    it('claims only the listed types and queues', async () => {
      const s = db.storage;
      const [a, b, other] = [uniq('claim'), uniq('claim'), uniq('claim')];
      const res = await s.jobs.insert({ jobs: [
        newJob(a, { queue: 'q1' }),
        newJob(a, { queue: 'q2' }),
        newJob(b, { queue: 'q1' }),
        newJob(other, { queue: 'q1' }),
      ] });
      const ids = res.map((r) => r.job.id);
      const inQ1 = await s.leases.claim({ workerId: 'w1', types: [a, b], queues: ['q1'], limit: 10, leaseMs: 30_000 });
      assert.deepEqual(inQ1.map((c) => c.id).sort(), [ids[0], ids[2]].sort());
      const anyQueue = await s.leases.claim({ workerId: 'w1', types: [a, b], queues: null, limit: 10, leaseMs: 30_000 });
      assert.deepEqual(anyQueue.map((c) => c.id), [ids[1]]);
      assert.equal((await mustGet(s, ids[3]!)).status, 'queued', 'unlisted type untouched');
    });

    it('orders by priority, then run_at, then id; honours limit', async () => {
      const s = db.storage;
      const type = uniq('claim');
      const now = (await s.now()).getTime();
      const res = await s.jobs.insert({ jobs: [
        newJob(type, { payload: 'A', priority: 5, runAt: new Date(now - 1000) }),
        newJob(type, { payload: 'B', priority: 0, runAt: new Date(now - 10) }),
        newJob(type, { payload: 'C', priority: 0, runAt: new Date(now - 1000) }),
        newJob(type, { payload: 'D', priority: -1, runAt: new Date(now - 5) }),
        newJob(type, { payload: 'E', priority: 0, runAt: new Date(now - 1000) }),
      ] });
      assert.equal(res.length, 5);
      const order: unknown[] = [];
      for (let i = 0; i < 5; i++) {
        const got = await s.leases.claim({ workerId: 'w1', types: [type], queues: null, limit: 1, leaseMs: 30_000 });
        assert.equal(got.length, 1, 'limit 1 claims one');
        order.push(got[0]!.payload);
      }
      assert.deepEqual(order, ['D', 'C', 'E', 'B', 'A']);
      assert.deepEqual(await s.leases.claim({ workerId: 'w1', types: [type], queues: null, limit: 1, leaseMs: 30_000 }), []);

      const type2 = uniq('claim');
      await insertN(s, type2, 5);
      const first = await s.leases.claim({ workerId: 'w1', types: [type2], queues: null, limit: 3, leaseMs: 30_000 });
      const rest = await s.leases.claim({ workerId: 'w1', types: [type2], queues: null, limit: 3, leaseMs: 30_000 });
      assert.equal(first.length, 3);
      assert.equal(rest.length, 2);
    });

    it('sets status, worker, a fresh token, locked_until, heartbeat/started, attempts + 1, and opens an attempt row', async () => {
      const s = db.storage;
      const type = uniq('claim');
      const [ins] = await s.jobs.insert({ jobs: [newJob(type)] });
      const t0 = (await s.now()).getTime();
      const c = await claimOne(s, type, 45_000, 'worker-A');
      const t1 = (await s.now()).getTime();
      assert.equal(c.id, ins!.job.id);
      assert.equal(c.status, 'running');
      assert.equal(c.lockedBy, 'worker-A');
      assert.equal(typeof c.leaseToken, 'string');
      assert.ok(c.leaseToken.length >= 16, `token of >= 128 bits, got ${JSON.stringify(c.leaseToken)}`);
      assertBetween(c.lockedUntil.getTime(), t0 + 45_000, t1 + 45_000, 'lockedUntil');
      assertBetween(c.heartbeatAt!.getTime(), t0, t1, 'heartbeatAt');
      assertBetween(c.startedAt!.getTime(), t0, t1, 'startedAt');
      assert.equal(c.attempts, 1);
      assert.deepEqual(c.payload, ins!.job.payload);
      const stored = await mustGet(s, c.id);
      assert.equal(stored.leaseToken, c.leaseToken);
      assert.equal(stored.status, 'running');
      assert.equal(stored.attempts, 1);
      assert.equal(stored.lockedUntil!.getTime(), c.lockedUntil.getTime());

      const attempts = await s.attempts.list({ jobId: c.id });
      assert.equal(attempts.length, 1);
      const a = attempts[0]!;
      assert.equal(a.jobId, c.id);
      assert.equal(a.attempt, 1);
      assert.equal(a.workerId, 'worker-A');
      assert.equal(a.leaseToken, c.leaseToken);
      assert.equal(a.outcome, 'running');
      assertBetween(a.startedAt.getTime(), t0, t1, 'attempt startedAt');
      assert.equal(a.finishedAt, null);
      assert.equal(a.durationMs, null);
    });

    it('tokens are distinct per claim; a re-claim after a finish gets a new token and attempt', async () => {
      const s = db.storage;
      const type = uniq('claim');
      await insertN(s, type, 10);
      const batch = await s.leases.claim({ workerId: 'w1', types: [type], queues: null, limit: 10, leaseMs: 30_000 });
      assert.equal(new Set(batch.map((c) => c.leaseToken)).size, 10);

      const c1 = batch[0]!;
      await finish(s, c1, { status: 'failed', runAfterMs: 0, error: { code: 'E', message: 'boom' }, attempt: { outcome: 'failed' } });
      const c2 = await claimOne(s, type, 30_000, 'w2');
      assert.equal(c2.id, c1.id);
      assert.notEqual(c2.leaseToken, c1.leaseToken);
      assert.equal(c2.attempts, 2);
      assert.equal(c2.lockedBy, 'w2');
      const attempts = await s.attempts.list({ jobId: c1.id });
      assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome, a.leaseToken]), [
        [1, 'failed', c1.leaseToken],
        [2, 'running', c2.leaseToken],
      ]);
    });

    it('a running job is never claimed again, even after its lease expired (the sweeper rescues it)', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 50 });
      await sleep(90);
      assert.deepEqual(await s.leases.claim({ workerId: 'w2', types: [c.type], queues: null, limit: 5, leaseMs: 30_000 }), []);
      assert.equal((await mustGet(s, c.id)).leaseToken, c.leaseToken);
    });
  });

  describe('heartbeat', () => {
    const db = useDb(h);

    it('extends locked_until and heartbeat_at of held leases', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 1_000 });
      await sleep(15);
      const t0 = (await s.now()).getTime();
      const res = await s.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 });
      const t1 = (await s.now()).getTime();
      assert.deepEqual(res, { lost: [] });
      const j = await mustGet(s, c.id);
      assertBetween(j.lockedUntil!.getTime(), t0 + 60_000, t1 + 60_000, 'lockedUntil');
      assertBetween(j.heartbeatAt!.getTime(), t0, t1, 'heartbeatAt');
      assert.ok(j.heartbeatAt!.getTime() > c.heartbeatAt!.getTime());
      assert.equal(j.leaseToken, c.leaseToken);
      assert.equal(j.status, 'running');
    });

    it('reports lost leases with the job status: wrong token, finished job, unknown job', async () => {
      const s = db.storage;
      const held = await insertAndClaim(s);
      const wrong = await insertAndClaim(s);
      const done = await insertAndClaim(s);
      await finish(s, done);
      const before = await mustGet(s, wrong.id);
      const res = await s.leases.heartbeat({
        leases: [
          { id: held.id, leaseToken: held.leaseToken },
          { id: wrong.id, leaseToken: WRONG_TOKEN },
          { id: done.id, leaseToken: done.leaseToken },
          { id: '987654321', leaseToken: WRONG_TOKEN },
        ],
        leaseMs: 60_000,
      });
      const lost = [...res.lost].sort((a, b) => Number(a.id) - Number(b.id));
      assert.deepEqual(lost, [
        { id: wrong.id, status: 'running' },
        { id: done.id, status: 'succeeded' },
        { id: '987654321', status: null },
      ]);
      assert.equal((await mustGet(s, wrong.id)).lockedUntil!.getTime(), before.lockedUntil!.getTime(), 'wrong token extends nothing');
    });

    it('a heartbeat after expiry but before any rescue still holds (token and status match)', async () => {
      const s = db.storage;
      const c = await insertAndClaim(s, { leaseMs: 40 });
      await sleep(80);
      const res = await s.leases.heartbeat({ leases: [{ id: c.id, leaseToken: c.leaseToken }], leaseMs: 60_000 });
      assert.deepEqual(res.lost, []);
      const expired = await s.leases.findExpired({ limit: 1000 });
      assert.ok(!expired.some((e) => e.id === c.id), 'no longer expired');
    });
  });
}
