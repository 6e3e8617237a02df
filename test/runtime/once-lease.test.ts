/**
 * ctx.once acts on a reservation only while the lease surely holds, and every call that learns
 * the lease is lost aborts the attempt's signal.
 *
 * The paused worker: the reserve lands, and then the whole process stalls (the thread is
 * blocked, as a SIGSTOP or a long pause would) past the lease, while a sweeper rescues the job.
 * When the answer finally reaches the handler, no timer has had a turn: only the local lease
 * deadline (monotonic, counted from before the last write that confirmed the lease) can tell
 * that the lease may be gone. The effect must not run in that attempt; the next one runs it,
 * once. On memory, SQLite, PostgreSQL and MySQL/MariaDB.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { JobRegistry } from '../../src/runtime/job-definition.js';
import { Sweeper } from '../../src/runtime/sweeper.js';
import { deferred, describeEachHarness, onFirstReserve, overriding, waitFor } from './support.js';

const LEASE_MS = 600;

/** Block this thread for `ms`: nothing else in the process runs meanwhile. */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

await describeEachHarness('ctx.once and the lease', (harness) => {

  test('a reservation answered after the lease may have lapsed is not acted on; the next attempt runs the effect once', async () => {
    const h = harness();
    const type = 'paused-once';
    let calls = 0;
    const seen: unknown[] = [];
    const def = defineJob({
      type,
      timeoutMs: 600_000,
      maxAttempts: 3,
      retry: { kind: 'fixed', delayMs: 0 },
      handler: async (_p, ctx) => {
        try {
          await ctx.once('send', () => void calls++);
          seen.push({ attempt: ctx.attempt, once: 'ok' });
        } catch (e) {
          seen.push({ attempt: ctx.attempt, once: (e as { code?: string }).code, aborted: ctx.signal.aborted });
          throw e;
        }
      },
    });
    let paused = false;
    const sweeper = new Sweeper(h.storage, new JobRegistry([def]), h.log.logger, Math.random, { intervalMs: 1_000_000, retention: false, workerSilenceMs: 60_000 });
    // the reserve lands; then the process stalls past the lease (renewals it would send are
    // not sent), and a sweeper rescues the job before the answer reaches the handler
    const withPause = onFirstReserve(h.storage, async () => {
      paused = true;
      stall(LEASE_MS + 200);
      await waitFor(async () => (await sweeper.sweep()) === 1, 5_000, 'the rescue of the lapsed lease');
      paused = false;
    });
    const storage = overriding(withPause, 'leases', 'heartbeat', (heartbeat) => (p) => (paused ? new Promise(() => {}) : heartbeat(p)));
    const { client } = await h.serve([def], { storage, concurrency: 1, leaseMs: LEASE_MS });
    const job = await client.enqueue(type, {});
    const done = await h.waitStatus(job.id, 'succeeded', 10_000);
    assert.equal(calls, 1, `the effect ran once: ${JSON.stringify(seen)}`);
    assert.deepEqual(seen, [
      { attempt: 1, once: 'LEASE_LOST', aborted: true },
      { attempt: 2, once: 'ok' },
    ]);
    assert.equal(done.attempts, 2);
    assert.deepEqual((await h.client.listAttempts(job.id)).map((a) => a.outcome), ['lease_expired', 'succeeded']);
    const [effect] = await h.storage.effects.list({ jobId: job.id, limit: 10 });
    assert.equal(effect?.state, 'done');
  });

  test('a reserve, a record or a completion that finds the lease lost aborts the attempt (LEASE_LOST)', async () => {
    const h = harness();
    for (const how of ['reserve', 'record', 'heartbeat', 'completion'] as const) {
      const type = `learns-${how}`;
      const reached = deferred();
      const go = deferred();
      const seen: { code?: string; aborted?: boolean; reason?: string } = {};
      let take: () => Promise<void> = async () => {};
      const def = defineJob({
        type,
        timeoutMs: 600_000,
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          reached.resolve();
          await go.promise;
          try {
            if (how === 'heartbeat') await ctx.heartbeat();
            else if (how === 'completion') await ctx.succeedInTransaction(undefined);
            else await ctx.once(`k-${how}`, () => (how === 'record' ? take() : undefined));
          } catch (e) {
            seen.code = (e as { code?: string }).code;
          }
          seen.aborted = ctx.signal.aborted;
          seen.reason = (ctx.signal.reason as AbortReason | undefined)?.code;
        },
      });
      if (how === 'completion' && !h.storage.capabilities.transactionalEnqueue) continue;
      const { client, worker } = await h.serve([def], { concurrency: 1, leaseMs: 60_000 });
      const job = await client.enqueue(type, {});
      await reached.promise;
      const row = await h.job(job.id);
      // the lease is taken away behind the worker's back (a rescue by another process)
      take = async () => {
        const [r] = await h.storage.leases.finish({ items: [{ id: job.id, leaseToken: row.leaseToken as string, status: 'failed', runAfterMs: 60_000, attempt: { outcome: 'lease_expired' } }] });
        assert.equal(r?.applied, true);
      };
      if (how !== 'record') await take();
      go.resolve();
      await waitFor(() => seen.aborted !== undefined, 5_000, `the handler's ${how} to answer`);
      if (how !== 'completion') assert.equal(seen.code, 'LEASE_LOST', `${how}: ${JSON.stringify(seen)}`);
      assert.equal(seen.aborted, true, `${how}: the signal fired (${JSON.stringify(seen)})`);
      assert.equal(seen.reason, 'LEASE_LOST', how);
      await worker.stop();
    }
  });
});
