/**
 * The operator's admin operations through the client: cancel (a running handler is signalled
 * and the job is not retried), retryNow, and the typed errors for wrong states and unknown ids.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { InvalidStateError, JobNotFoundError, ValidationError } from '../../src/core/index.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, SHARED_KINDS, STORAGE_KINDS, describeEachKind, waitFor } from './support.js';

/** A handler that waits for its signal and reports why it fired. */
function waitsForAbort(seen: { reason?: AbortReason; calls: number }) {
  return async (_p: unknown, ctx: { signal: AbortSignal }) => {
    seen.calls++;
    await new Promise<void>((_, reject) =>
      ctx.signal.addEventListener(
        'abort',
        () => {
          seen.reason = ctx.signal.reason as AbortReason;
          reject(ctx.signal.reason);
        },
        { once: true },
      ),
    );
  };
}

await describeEachKind('admin operations', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('cancel of a running job aborts its handler with CANCELLED; the job ends cancelled, not retried', async () => {
    const seen: { reason?: AbortReason; calls: number } = { calls: 0 };
    const { client, worker } = await h.serve([
      defineJob({ type: 'long', maxAttempts: 5, retry: { kind: 'fixed', delayMs: 0 }, handler: waitsForAbort(seen) }),
    ]);
    const job = await client.enqueue('long', {});
    await h.waitStatus(job.id, 'running');
    await waitFor(() => seen.calls === 1, 2_000, 'the handler to start');
    const row = await client.cancel(job.id);
    assert.equal(row.status, 'cancelled');
    await waitFor(() => seen.reason, 2_000, 'the handler to be signalled');
    assert.equal(seen.reason?.code, 'CANCELLED');
    await waitFor(() => worker.inFlight === 0, 2_000, 'the slot to be freed');
    const final = await h.job(job.id);
    assert.equal(final.status, 'cancelled');
    assert.equal(final.lastErrorCode, 'CANCELLED');
    assert.equal(final.leaseToken, null);
    assert.equal(seen.calls, 1, 'not run again');
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => a.outcome), ['cancelled']);
  });

  test('cancel of a queued job: cancelled, never runs', async () => {
    const seen = { calls: 0 };
    const { client } = await h.serve([defineJob({ type: 'later', handler: () => void seen.calls++ })]);
    const job = await client.enqueue('later', {}, { delayMs: 300 });
    const row = await client.cancel(job.id);
    assert.equal(row.status, 'cancelled');
    assert.ok(row.finishedAt);
    assert.equal((await h.job(job.id)).status, 'cancelled');
    // a second job enqueued later, due at the same time, runs; the cancelled one does not
    const probe = await client.enqueue('later', {}, { delayMs: 300 });
    await h.waitStatus(probe.id, 'succeeded');
    assert.equal(seen.calls, 1);
    assert.equal((await h.job(job.id)).status, 'cancelled');
    assert.deepEqual(await h.client.listAttempts(job.id), []);
  });

  test('retryNow on a dead job → queued (attempts reset), and it runs again', async () => {
    let calls = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'fails-first',
        maxAttempts: 1,
        handler: () => {
          if (++calls === 1) throw new Error('first run fails');
        },
      }),
    ]);
    const job = await client.enqueue('fails-first', {});
    await h.waitStatus(job.id, 'dead');
    const retried = await client.retryNow(job.id);
    assert.equal(retried.status, 'queued');
    assert.equal(retried.attempts, 0);
    assert.equal(retried.finishedAt, null);
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.equal(calls, 2);
    assert.equal(done.attempts, 1);
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => a.outcome), ['dead', 'succeeded']);
  });

  test('retryNow / cancel on a succeeded job → InvalidStateError, nothing changes', async () => {
    const { client } = await h.serve([defineJob({ type: 'quick', handler: () => {} })]);
    const job = await client.enqueue('quick', {});
    const done = await h.waitStatus(job.id, 'succeeded');
    for (const op of [() => client.retryNow(job.id), () => client.cancel(job.id)]) {
      await assert.rejects(op, (e: unknown) => {
        assert.ok(e instanceof InvalidStateError);
        assert.equal(e.code, 'INVALID_STATE');
        assert.match(e.message, /succeeded/);
        return true;
      });
    }
    const after = await h.job(job.id);
    assert.equal(after.status, 'succeeded');
    assert.equal(after.updatedAt.getTime(), done.updatedAt.getTime());
  });

  test('unknown id → JobNotFoundError; malformed id → ValidationError', async () => {
    for (const op of [() => h.client.getJob('987654'), () => h.client.retryNow('987654'), () => h.client.cancel('987654')]) {
      await assert.rejects(op, (e: unknown) => e instanceof JobNotFoundError && e.code === 'JOB_NOT_FOUND' && e.jobId === '987654');
    }
    for (const id of ['abc', '0', '-1', '']) {
      await assert.rejects(() => h.client.cancel(id), (e: unknown) => e instanceof ValidationError && e.code === 'INVALID_OPTION');
    }
  });
});

// memory has no second connection: its cancel always reaches the worker in-process
await describeEachKind('admin cancel from another connection', SHARED_KINDS, (kind) => {
  test('the worker learns of the cancel through its heartbeat and aborts the handler with CANCELLED', async () => {
    const h = await Harness.open(kind);
    const seen: { reason?: AbortReason; calls: number } = { calls: 0 };
    try {
      // heartbeats every 500 ms: the cancel is noticed at the next one; a shorter lease could lapse
      // on a busy server (a renewal late by its third) and abort with LEASE_LOST instead
      const { client, worker } = await h.serve([defineJob({ type: 'remote-cancel', maxAttempts: 3, handler: waitsForAbort(seen) })], { leaseMs: 1_500 });
      const job = await client.enqueue('remote-cancel', {});
      await waitFor(() => seen.calls === 1, 2_000, 'the handler to start');
      // A different Storage object on the same database: no in-process bus, like another host.
      await new Client({ storage: await h.another() }).cancel(job.id);
      await waitFor(() => seen.reason, 10_000, 'the handler to be signalled via heartbeat');
      assert.equal(seen.reason?.code, 'CANCELLED');
      await waitFor(() => worker.inFlight === 0, 2_000, 'the slot to be freed');
      assert.equal((await h.job(job.id)).status, 'cancelled');
      assert.equal(seen.calls, 1);
    } finally {
      await h.close();
    }
  });
});
