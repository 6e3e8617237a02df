/**
 * The sweeper asks only for expired leases of the types its worker handles: a page of expired
 * leases of a type no running worker handles does not hide its own expired job, in a daemon's
 * sweeper or in `drain()` (cron mode).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { Harness, waitFor } from './support.js';

const ORPHANS = 150;

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`sweeper and types it does not handle (${kind})`, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(() => h.close());

    /** `ORPHANS` expired leases of `orphan` (the oldest), then one of `mine`, all held by a ghost. */
    async function expiredBehindOrphans(orphan: string, mine: string): Promise<string> {
      await h.storage.jobs.insert({ jobs: Array.from({ length: ORPHANS }, (_, i) => ({ queue: 'default', type: orphan, payload: { i }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 })) });
      assert.equal((await h.storage.leases.claim({ workerId: 'ghost', types: [orphan], queues: null, limit: ORPHANS, leaseMs: 1 })).length, ORPHANS);
      const job = await h.client.enqueue(mine, {});
      const [claimed] = await h.storage.leases.claim({ workerId: 'ghost', types: [mine], queues: null, limit: 1, leaseMs: 30 });
      assert.equal(claimed?.id, job.id);
      // every lease has lapsed, the orphans' first
      await waitFor(async () => (await h.storage.leases.findExpired({ limit: 10_000 })).some((l) => l.id === job.id), 5_000, 'the leases to expire');
      const oldest = await h.storage.leases.findExpired({ limit: ORPHANS });
      assert.ok(oldest.every((l) => l.type !== mine), 'the oldest page holds only leases of types no worker handles');
      return job.id;
    }

    test('drain(): its own expired job is rescued and run', async () => {
      const ran: string[] = [];
      const def = defineJob({ type: 'swept-drain', retry: { kind: 'fixed', delayMs: 0 }, handler: (_p, ctx) => void ran.push(ctx.job.id) });
      const id = await expiredBehindOrphans('orphan-drain', def.type);
      const report = await new Worker({ storage: h.storage, jobs: [def], logger: h.log.logger, scheduler: false, pollIntervalMs: 20 }).drain({ maxMs: 5_000 });
      assert.deepEqual(ran, [id]);
      assert.equal(report.processed, 1);
      const row = await h.job(id);
      assert.equal(row.status, 'succeeded');
      assert.deepEqual((await h.client.listAttempts(id)).map((a) => a.outcome), ['lease_expired', 'succeeded']);
    });

    test('a daemon sweeper: its own expired job is rescued and run', async () => {
      const def = defineJob({ type: 'swept-daemon', retry: { kind: 'fixed', delayMs: 0 }, handler: () => {} });
      const id = await expiredBehindOrphans('orphan-daemon', def.type);
      await h.worker([def], { sweeper: true, sweepIntervalMs: 20, scheduler: false });
      await h.waitStatus(id, 'succeeded');
      // the sweeper logs the rescue once its write returned: the job may have run by then
      await h.waitEvent('job.rescued', id);
      assert.equal(h.log.count('job.rescued', id), 1);
      // the orphans are not this worker's to rescue
      assert.equal((await h.client.listJobs({ type: 'orphan-daemon', status: 'running', limit: 1_000 })).length, ORPHANS);
    });
  });
}
