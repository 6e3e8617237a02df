/**
 * The sweeper, in-process: a job claimed by a "ghost" worker (directly via leases.claim,
 * short lease, never finished) is rescued by a running worker's sweeper and then completed;
 * with `onLeaseExpired: 'fail'` it goes dead instead. Each rescue is recorded and logged.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, overriding, sleep, waitFor } from './support.js';

await describeEachKind('sweeper rescues expired leases', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  async function ghostClaim(type: string): Promise<{ id: string; token: string }> {
    const c = await h.claimAs('ghost:1', type, 150);
    return { id: c.id, token: c.leaseToken };
  }

  test("onLeaseExpired 'retry' (default): rescued back to due, then run and completed", async () => {
    const ran: number[] = [];
    const def = defineJob({
      type: 'rescue-me',
      maxAttempts: 3,
      retry: { kind: 'fixed', delayMs: 20 },
      handler: (_p, ctx) => void ran.push(ctx.attempt),
    });
    const job = await h.clientWith([def]).enqueue('rescue-me', {});
    const ghost = await ghostClaim('rescue-me');
    assert.equal(ghost.id, job.id);

    // the worker cannot claim it (it is running under the ghost's lease) until the sweeper acts
    await h.worker([def], { sweeper: true, sweepIntervalMs: 40 });
    const rescued = await h.waitEvent('job.rescued', job.id, 5_000);
    assert.equal(rescued.lockedBy, 'ghost:1');
    assert.equal(rescued.status, 'failed');
    assert.equal(rescued.nextDelayMs, 20);
    assert.equal(rescued.level, 40);

    const done = await h.waitStatus(job.id, 'succeeded', 5_000);
    assert.deepEqual(ran, [2], 'the handler ran once, as attempt 2');
    assert.equal(done.attempts, 2);
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.workerId, a.outcome, a.errorCode]),
      [
        [1, 'ghost:1', 'lease_expired', 'LEASE_EXPIRED'],
        [2, h.workers.at(-1)?.id, 'succeeded', null],
      ],
    );
    // the ghost's late finish is fenced off
    const [late] = await h.storage.leases.finish({ items: [{ id: job.id, leaseToken: ghost.token, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
    assert.equal(late?.applied, false);
    assert.equal(h.log.count('job.rescued', job.id), 1, 'rescued exactly once');
  });

  test("onLeaseExpired 'fail': the expired job goes dead, the handler never runs", async () => {
    let ran = 0;
    const def = defineJob({ type: 'not-idempotent', maxAttempts: 5, onLeaseExpired: 'fail', handler: () => void ran++ });
    const job = await h.clientWith([def]).enqueue('not-idempotent', {});
    await ghostClaim('not-idempotent');
    await h.worker([def], { sweeper: true, sweepIntervalMs: 40 });
    const dead = await h.waitStatus(job.id, 'dead', 5_000);
    assert.equal(dead.lastErrorCode, 'LEASE_EXPIRED');
    assert.equal(dead.attempts, 1);
    assert.ok(dead.finishedAt);
    const rescued = await h.waitEvent('job.rescued', job.id);
    assert.equal(rescued.status, 'dead');
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => a.outcome), ['lease_expired']);
    assert.equal(ran, 0);
  });

  test("a sweeper without the type's definition leaves its expired lease to one that has it", async () => {
    // Regression: a worker serving other types used to rescue it with the default 'retry'
    // policy, so an onLeaseExpired: 'fail' (non-idempotent) job ran again.
    let ran = 0;
    const def = defineJob({ type: 'nid-2', maxAttempts: 5, onLeaseExpired: 'fail', handler: () => void ran++ });
    const job = await h.clientWith([def]).enqueue('nid-2', {});
    await ghostClaim('nid-2');
    await h.worker([defineJob({ type: 'something-else', handler: () => {} })], { sweeper: true, sweepIntervalMs: 20 });
    await new Promise((r) => setTimeout(r, 400)); // the lease expires, many sweeps go by
    assert.equal((await h.job(job.id)).status, 'running');
    assert.equal(h.log.count('job.rescued', job.id), 0);
    await h.worker([def], { sweeper: true, sweepIntervalMs: 20 });
    const dead = await h.waitStatus(job.id, 'dead', 5_000);
    assert.equal(dead.lastErrorCode, 'LEASE_EXPIRED');
    assert.equal(ran, 0);
  });

  test('an expired lease on the last allowed attempt goes dead', async () => {
    const def = defineJob({ type: 'last-chance', maxAttempts: 1, handler: () => {} });
    const job = await h.clientWith([def]).enqueue('last-chance', {});
    await ghostClaim('last-chance');
    await h.worker([def], { sweeper: true, sweepIntervalMs: 40 });
    const dead = await h.waitStatus(job.id, 'dead', 5_000);
    assert.equal(dead.lastErrorCode, 'LEASE_EXPIRED');
  });

  test('a live lease (heartbeating worker) is never rescued', async () => {
    const gate = deferred();
    const def = defineJob({ type: 'slow-ok', handler: () => gate.promise });
    const job = await h.clientWith([def]).enqueue('slow-ok', {});
    let beats = 0;
    const beating = overriding(h.storage, 'leases', 'heartbeat', (heartbeat) => async (p) => {
      const r = await heartbeat(p);
      beats++;
      return r;
    });
    // lease 2 s, renewed every third of it: a renewal would have to be late by more than a second to lapse
    await h.worker([def], { storage: beating, leaseMs: 2_000 });
    await h.waitStatus(job.id, 'running');
    let sweeps = 0;
    const counted = overriding(h.storage, 'leases', 'findExpired', (find) => async (p) => {
      sweeps++;
      return find(p);
    });
    // a second worker that handles the type, so it would rescue the job if its lease lapsed
    await h.worker([def], { storage: counted, sweeper: true, sweepIntervalMs: 40, concurrency: 1 });
    // past three lease lengths of renewals, with the sweeper looking all along
    await waitFor(() => beats >= 9 && sweeps >= 20, 40_000, 'nine renewals and twenty sweeps');
    gate.resolve();
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.equal(done.attempts, 1);
    assert.equal(h.log.count('job.rescued', job.id), 0);
  });

  test(
    'stop() waits for a sweep still out, and no sweep follows it',
    async () => {
      const gate = deferred();
      const order: string[] = [];
      let sweeps = 0;
      // the first sweep waits for the gate, so it is still out when stop() runs
      const sweeping = overriding(h.storage, 'leases', 'findExpired', (find) => async (p) => {
        if (++sweeps === 1) {
          await gate.promise;
          order.push('sweep ended');
        }
        return find(p);
      });
      // the gate opens a turn after the worker row is removed: a stop() that did not wait for the sweep has returned by then
      const storage = overriding(sweeping, 'workers', 'remove', (remove) => async (p) => {
        await remove(p);
        setImmediate(() => gate.resolve());
      });
      const worker = await h.worker([defineJob({ type: 'swept', handler: () => {} })], { storage, sweeper: true, sweepIntervalMs: 20 });
      await waitFor(() => sweeps === 1, 3_000, 'a sweep to be out');
      await worker.stop();
      order.push('stopped');
      assert.deepEqual(order, ['sweep ended', 'stopped']);
      const atStop = sweeps;
      // a sweeper still looping sweeps again within a few of its 20 ms intervals
      await sleep(300);
      assert.equal(sweeps, atStop, 'the sweeper went on after stop()');
    },
  );
});
