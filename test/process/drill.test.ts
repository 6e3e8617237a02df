/**
 * The drill (issue 2): 100 "receipt email" jobs, 20 of them failing twice before succeeding,
 * the worker process SIGKILLed mid-run and restarted. All 100 end succeeded, the ledger and
 * the outbox hold exactly 100 sends, and the retried jobs show their failed attempts with the
 * backoff delays actually waited out.
 *
 * Where the kill lands: one job (#51) sends its receipt, then parks its handler, blocking the
 * worker's event loop synchronously, and the test SIGKILLs the process then; its rerun must
 * find the send in the ledger and not repeat it. A kill at an arbitrary instant could
 * fall between a send and its ledger record — the one window an effect ledger cannot close
 * (at-least-once effects) — and would make "exactly 100 outbox lines" a matter of luck. With
 * the loop blocked, no other handler can be inside that window, so the count is exact and the
 * test still fails if the ledger ever lets a rerun send twice.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Sandbox, killAll, tally, waitForSucceeded } from './support.js';

after(killAll);

const TOTAL = 100;
const isFlaky = (i: number) => i % 5 === 0; // 20 of them
const PARK = 51;
const TOLERANCE_MS = 3;

describe('process: the receipt-email drill', () => {
  it('survives a SIGKILL mid-run: 100 succeeded, 100 sends, retries with their backoff', { timeout: 600_000 }, async (t) => {
    const sb = await Sandbox.create();
    try {
      const jobs = await sb.client.enqueueMany(
        Array.from({ length: TOTAL }, (_, i) => ({
          type: 'receipt-email',
          payload: { sleepMs: 15, effectKey: `receipt:${i}`, ...(isFlaky(i) ? { failTimes: 2 } : {}), ...(i === PARK ? { parkMs: 120_000, effectFirst: true } : {}) },
        })),
      );
      const flaky = new Set(jobs.filter((_, i) => isFlaky(i)).map((j) => j.id));
      assert.equal(flaky.size, 20);

      const first = await sb.worker(['--concurrency', '4']);
      await sb.parked(jobs[PARK]!.id);
      const before = await sb.statusCounts();
      t.diagnostic(`at the kill: ${JSON.stringify(before)}`);
      assert.ok(sb.outboxLines().some((s) => s.key === `receipt:${PARK}`), 'the parked job sent before the kill');
      first.signal('SIGKILL');
      assert.equal((await first.waitExit()).signal, 'SIGKILL');
      // Mid-run: some done, some not, and the dead worker still holds leases.
      assert.ok((before.succeeded ?? 0) >= 20 && (before.succeeded ?? 0) < TOTAL, `killed mid-run: ${JSON.stringify(before)}`);
      const held = await sb.storage.jobs.list({ status: 'running', limit: 100 });
      assert.ok(held.some((j) => j.id === jobs[PARK]!.id), 'the parked job was running at the kill');
      assert.ok(held.every((j) => j.lockedBy === first.workerId));

      const second = await sb.worker(['--concurrency', '4']);
      await waitForSucceeded(sb, TOTAL);
      assert.ok(second.events('job.rescued').length >= 1, 'the restarted worker rescued the killed worker’s jobs');
      second.signal('SIGTERM');
      assert.equal((await second.waitExit()).code, 0);

      // Every job succeeded; one send each in the ledger and in the outbox.
      assert.deepEqual(await sb.statusCounts(), { succeeded: TOTAL });
      assert.equal(await sb.storage.effects.count(), TOTAL);
      const sends = sb.outboxLines();
      const dupes = [...tally(sends.map((s) => s.key))].filter(([, n]) => n > 1);
      assert.deepEqual(dupes, [], 'no receipt was sent twice');
      assert.equal(sends.length, TOTAL);
      assert.deepEqual(new Set(sends.map((s) => s.key)), new Set(jobs.map((_, i) => `receipt:${i}`)));

      const handlerFailures = tally(sb.failureLines());
      let swallowed = 0;
      for (const job of jobs) {
        const attempts = await sb.storage.attempts.list({ jobId: job.id });
        const final = attempts.at(-1);
        assert.equal(final?.outcome, 'succeeded', `job ${job.id}: ${JSON.stringify(attempts)}`);
        assert.equal(attempts.filter((a) => a.outcome === 'succeeded').length, 1);
        assert.deepEqual(attempts.map((a) => a.attempt), attempts.map((_, i) => i + 1), `job ${job.id}: attempts numbered 1..n`);
        // Every attempt that was retried waited out its delay before the next one started.
        for (let i = 0; i + 1 < attempts.length; i++) {
          const a = attempts[i]!;
          const next = attempts[i + 1]!;
          assert.ok(['failed', 'lease_expired'].includes(a.outcome), `job ${job.id} attempt ${a.attempt}: ${a.outcome}`);
          assert.ok((a.retryDelayMs ?? 0) > 0, `job ${job.id} attempt ${a.attempt} carries its retry delay`);
          const gap = next.startedAt.getTime() - a.finishedAt!.getTime();
          assert.ok(gap >= a.retryDelayMs! - TOLERANCE_MS, `job ${job.id}: attempt ${next.attempt} started ${gap} ms after attempt ${a.attempt}; backoff was ${a.retryDelayMs} ms`);
        }
        const failed = attempts.filter((a) => a.outcome === 'failed');
        if (flaky.has(job.id)) {
          assert.ok(attempts.length >= 3, `flaky job ${job.id} made ${attempts.length} attempts`);
          assert.equal(handlerFailures.get(job.id), 2, `flaky job ${job.id}: its handler failed twice`);
          // Both failures are in the history — unless the kill came after the handler threw but
          // before the worker wrote that down: then that attempt shows as the killed worker's
          // expired lease (its result was lost with the process, which is what history says).
          const killed = attempts.filter((a) => a.outcome === 'lease_expired' && a.workerId === first.workerId);
          assert.ok(failed.length === 2 || (failed.length === 1 && killed.length === 1), `flaky job ${job.id}: ${JSON.stringify(attempts)}`);
          if (failed.length === 1) swallowed++;
          for (const f of failed) {
            assert.equal(f.errorCode, 'Error');
            assert.match(f.errorMessage ?? '', /^flaky: failure [12] of 2/);
          }
        } else {
          assert.equal(failed.length, 0, `job ${job.id} never failed by itself`);
          assert.equal(handlerFailures.get(job.id), undefined);
        }
      }
      t.diagnostic(`flaky failures whose record the kill swallowed: ${swallowed}`);

      // The parked job: killed in attempt 1 (lease expired), then completed by the restarted worker.
      const parked = await sb.storage.attempts.list({ jobId: jobs[PARK]!.id });
      assert.deepEqual(parked.map((a) => [a.workerId, a.outcome, a.errorCode]), [
        [first.workerId, 'lease_expired', 'LEASE_EXPIRED'],
        [second.workerId, 'succeeded', null],
      ]);
      assert.ok(second.events((l) => l.event === 'effect.skipped' && l.key === `receipt:${PARK}`).length === 1, 'its rerun skipped the recorded send');
    } finally {
      await killAll();
      await sb.close();
    }
  });
});
