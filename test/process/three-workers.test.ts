/**
 * Three worker processes on one SQLite file drain 2,000 jobs: every job succeeded exactly once,
 * the effect ledger and the outbox have 2,000 entries, and no job ran under two valid leases.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { Sandbox, assertNoOverlap, killAll, tally, waitForSucceeded } from './support.js';

after(killAll);

const TOTAL = 2_000;
const BATCH = 250;

describe('process: three workers, one SQLite file', () => {
  it('drain 2,000 jobs: each succeeds once, 2,000 sends, no overlapping leases', { timeout: 600_000 }, async (t) => {
    const sb = await Sandbox.create();
    try {
      for (let from = 0; from < TOTAL; from += BATCH) {
        await sb.client.enqueueMany(
          Array.from({ length: BATCH }, (_, k) => ({ type: 'work', payload: { sleepMs: (from + k) % 7, effectKey: `send:${from + k}` } })),
        );
      }
      assert.deepEqual(await sb.statusCounts(), { queued: TOTAL });

      const startedAt = Date.now();
      const workers: CliProcess[] = await Promise.all([0, 1, 2].map(() => sb.worker(['--concurrency', '8'])));
      await waitForSucceeded(sb, TOTAL);
      t.diagnostic(`3 workers drained ${TOTAL} jobs in ${Date.now() - startedAt} ms`);
      for (const w of workers) w.signal('SIGTERM');
      for (const w of workers) assert.equal((await w.waitExit()).code, 0, w.tail());

      assert.deepEqual(await sb.statusCounts(), { succeeded: TOTAL });

      // Every worker took part, and the logs agree with the database: one success per job.
      const ids = new Set(workers.map((w) => w.workerId));
      assert.equal(ids.size, 3);
      const perWorker = workers.map((w) => w.events('job.succeeded').length);
      t.diagnostic(`successes per worker: ${perWorker.join(', ')}`);
      for (const n of perWorker) assert.ok(n > 0, `every worker ran jobs: ${perWorker.join(', ')}`);
      const logged = tally(workers.flatMap((w) => w.events('job.succeeded').map((l) => l.jobId)));
      assert.equal(logged.size, TOTAL);
      assert.ok([...logged.values()].every((n) => n === 1), 'no job logged success twice');
      const lost = workers.flatMap((w) => w.events((l) => l.event === 'job.lease_lost' || l.event === 'job.rescued'));
      t.diagnostic(`lease_lost/rescued events: ${lost.length}`);

      // Attempt history: exactly one succeeded attempt per job, every attempt closed, none overlapping.
      const jobs = await sb.storage.jobs.list({ limit: TOTAL + 10 });
      assert.equal(jobs.length, TOTAL);
      let extraAttempts = 0;
      for (const job of jobs) {
        assert.equal(job.status, 'succeeded');
        assert.equal(job.lockedBy, null);
        const attempts = await sb.storage.attempts.list({ jobId: job.id });
        assert.equal(attempts.filter((a) => a.outcome === 'succeeded').length, 1, `job ${job.id}: ${JSON.stringify(attempts)}`);
        assert.equal(attempts.length, job.attempts, `job ${job.id}: one history row per counted attempt`);
        for (const a of attempts) assert.ok(ids.has(a.workerId), `attempt by an unknown worker ${a.workerId}`);
        extraAttempts += attempts.length - 1;
        assertNoOverlap(job.id, attempts);
      }
      t.diagnostic(`attempts beyond the first: ${extraAttempts}`);

      // The ledger and the outbox: one send per job, none twice.
      assert.equal(await sb.storage.effects.count(), TOTAL);
      const effects = await sb.storage.effects.list({ limit: TOTAL + 10 });
      assert.equal(effects.length, TOTAL);
      assert.ok(effects.every((e) => e.state === 'done'));
      assert.equal(new Set(effects.map((e) => e.jobId)).size, TOTAL, 'one effect per job');
      const sends = sb.outboxLines();
      const dupes = [...tally(sends.map((s) => s.key))].filter(([, n]) => n > 1);
      assert.deepEqual(dupes, [], 'no send happened twice');
      assert.equal(sends.length, TOTAL);
      assert.equal(new Set(sends.map((s) => s.pid)).size, 3, 'sends came from all three processes');
    } finally {
      await killAll();
      await sb.close();
    }
  });
});
