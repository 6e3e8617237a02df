/**
 * Four worker processes on one PostgreSQL schema, and on one MySQL/MariaDB database, drain
 * 20,000 jobs: every job succeeded exactly once (one 'succeeded' attempt each), the effect
 * ledger and the outbox hold 20,000 entries, and no job ran under two valid leases at once
 * (its attempt intervals do not overlap). The drain rate is printed, never asserted.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { CliProcess } from './support.js';
import { SERVER_KINDS, Sandbox, dbTargets, killAll, tally, verifyDrain, waitForSucceeded } from './support.js';

after(killAll);

const TOTAL = 20_000;
const BATCH = 1_000;
const WORKERS = 4;

const targets = await dbTargets('process four workers', SERVER_KINDS);

for (const { kind, server, skip } of targets) {
  describe(`process: four workers drain 20,000 jobs (${kind})`, { skip }, () => {
    it('each job succeeds once; ledger == outbox == 20,000; no overlapping leases', { timeout: 600_000 }, async (t) => {
      const sb = await Sandbox.create(kind, server);
      try {
        const enqueueStart = Date.now();
        for (let from = 0; from < TOTAL; from += BATCH) {
          await sb.client.enqueueMany(Array.from({ length: BATCH }, (_, k) => ({ type: 'work', payload: { effectKey: `send:${from + k}` } })));
        }
        t.diagnostic(`${kind}: enqueued ${TOTAL} jobs in ${Date.now() - enqueueStart} ms`);
        assert.deepEqual(await sb.statusCounts(), { queued: TOTAL });

        const workers: CliProcess[] = await Promise.all(Array.from({ length: WORKERS }, () => sb.worker(['--concurrency', '10', '--lease', '10s'])));
        const startedAt = Date.now();
        await waitForSucceeded(sb, TOTAL);
        const ms = Date.now() - startedAt;
        t.diagnostic(`${kind}: ${WORKERS} workers drained ${TOTAL} jobs in ${ms} ms (${Math.round((TOTAL * 1000) / ms)} jobs/s)`);
        for (const w of workers) w.signal('SIGTERM');
        for (const w of workers) assert.equal((await w.waitExit()).code, 0, w.tail());

        const ids = new Set(workers.map((w) => w.workerId));
        assert.equal(ids.size, WORKERS);
        const perWorker = workers.map((w) => w.events('job.succeeded').length);
        t.diagnostic(`${kind}: successes per worker: ${perWorker.join(', ')}`);
        for (const n of perWorker) assert.ok(n > 0, `every worker ran jobs: ${perWorker.join(', ')}`);
        const logged = tally(workers.flatMap((w) => w.events('job.succeeded').map((l) => l.jobId)));
        assert.equal(logged.size, TOTAL);
        assert.ok([...logged.values()].every((n) => n === 1), 'no job logged success twice');

        const audit = await verifyDrain(sb, TOTAL, ids);
        t.diagnostic(`${kind}: attempts beyond the first: ${audit.extraAttempts}; outcomes ${JSON.stringify(Object.fromEntries(audit.outcomes))}`);
        if (audit.errors.size > 0) t.diagnostic(`${kind}: why attempts failed: ${JSON.stringify(Object.fromEntries(audit.errors))}`);
        assert.equal(new Set(sb.outboxLines().map((s) => s.pid)).size, WORKERS, 'sends came from all four processes');
      } finally {
        await killAll();
        await sb.close();
      }
    });
  });
}
