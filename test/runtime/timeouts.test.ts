/**
 * Bounds on one attempt: the inactivity timeout (reset by ctx.heartbeat), the max runtime
 * (heartbeats or not), and a handler that ignores its abort signal (slot freed after the grace
 * period with a warning, the lease kept until it returns, then recorded as timed out, late
 * result discarded).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, sleep, waitFor } from './support.js';

/** Resolves when the signal fires (a well-behaved long handler). */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** A handler that waits for its signal, and what it saw: the abort's reason and when it came. */
function abortWatcher() {
  const w = {
    reason: undefined as AbortReason | undefined,
    abortedAfterMs: -1,
    handler: async (_p: unknown, ctx: { signal: AbortSignal }) => {
      const t0 = Date.now();
      try {
        await untilAborted(ctx.signal);
      } finally {
        w.abortedAfterMs = Date.now() - t0;
        w.reason = ctx.signal.reason as AbortReason;
      }
    },
  };
  return w;
}

await describeEachKind('attempt bounds', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('a handler that never resolves is aborted at its timeoutMs: TIMEOUT, attempt timed_out', async () => {
    const waiting = abortWatcher();
    const { client } = await h.serve([
      defineJob({
        type: 'hangs',
        timeoutMs: 200,
        maxRuntimeMs: 60_000,
        maxAttempts: 1,
        handler: waiting.handler,
      }),
    ]);
    const job = await client.enqueue('hangs', {});
    const dead = await h.waitStatus(job.id, 'dead');
    assert.equal(waiting.reason?.code, 'TIMEOUT');
    assert.ok(waiting.abortedAfterMs >= 190 && waiting.abortedAfterMs < 1_500, `aborted after ${waiting.abortedAfterMs} ms, timeout is 200`);
    assert.equal(dead.lastErrorCode, 'TIMEOUT');
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => [a.outcome, a.errorCode]), [['timed_out', 'TIMEOUT']]);
  });

  test('a short timeout that starts after a long one is enforced on time (one timer serves all attempts)', async () => {
    const waiting = abortWatcher();
    const longStarted = deferred();
    const { client } = await h.serve([
      defineJob({
        type: 'long-limit',
        timeoutMs: 60_000,
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          longStarted.resolve();
          await untilAborted(ctx.signal);
        },
      }),
      defineJob({
        type: 'short-limit',
        timeoutMs: 200,
        maxAttempts: 1,
        handler: waiting.handler,
      }),
    ]);
    const long = await client.enqueue('long-limit', {});
    await longStarted.promise;
    const short = await client.enqueue('short-limit', {});
    await h.waitStatus(short.id, 'dead');
    assert.equal(waiting.reason?.code, 'TIMEOUT');
    assert.ok(waiting.abortedAfterMs >= 190 && waiting.abortedAfterMs < 1_500, `aborted after ${waiting.abortedAfterMs} ms, timeout is 200`);
    assert.equal((await h.client.getJob(long.id))?.status, 'running', 'the long one runs on');
  });

  test('a timed-out attempt with attempts left is retried', async () => {
    let calls = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'hangs-once',
        timeoutMs: 150,
        maxAttempts: 2,
        retry: { kind: 'fixed', delayMs: 10 },
        handler: async (_p, ctx) => {
          if (++calls === 1) await untilAborted(ctx.signal);
        },
      }),
    ]);
    const job = await client.enqueue('hangs-once', {});
    await h.waitStatus(job.id, 'succeeded');
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome, a.retryDelayMs]), [
      [1, 'timed_out', 10],
      [2, 'succeeded', null],
    ]);
  });

  test('a handler that heartbeats forever is stopped at maxRuntimeMs: MAX_RUNTIME, attempt max_runtime', async () => {
    let reason: AbortReason | undefined;
    let ranMs = -1;
    let beats = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'busy-forever',
        // inactivity bound far above a heartbeat's round trip to a busy server, runtime bound past two of them
        timeoutMs: 600,
        maxRuntimeMs: 1_500,
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          const t0 = Date.now();
          try {
            for (;;) {
              await sleep(30);
              await ctx.heartbeat();
              beats++;
            }
          } finally {
            ranMs = Date.now() - t0;
            reason = ctx.signal.reason as AbortReason;
          }
        },
      }),
    ]);
    const job = await client.enqueue('busy-forever', {});
    const dead = await h.waitStatus(job.id, 'dead');
    await waitFor(() => reason, 2_000, 'the handler to see its abort');
    assert.equal(reason?.code, 'MAX_RUNTIME');
    assert.ok(ranMs >= 1_490, `stopped after ${ranMs} ms, max runtime is 1,500`);
    assert.ok(beats > 5, 'it kept heartbeating past the 600 ms inactivity timeout');
    assert.equal(dead.lastErrorCode, 'MAX_RUNTIME');
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((a) => a.outcome), ['max_runtime']);
  });

  test('ctx.heartbeat() resets the inactivity timeout: working past timeoutMs while heartbeating succeeds', async () => {
    const { client } = await h.serve([
      defineJob({
        type: 'slow-but-alive',
        // far above a heartbeat's round trip to a busy server
        timeoutMs: 600,
        maxRuntimeMs: 30_000,
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          const until = Date.now() + 1_500;
          while (Date.now() < until) {
            await sleep(50);
            await ctx.heartbeat();
          }
          return 'done';
        },
      }),
    ]);
    const job = await client.enqueue('slow-but-alive', {});
    const done = await h.waitStatus(job.id, 'succeeded');
    const [a] = await h.client.listAttempts(job.id);
    assert.equal(a?.outcome, 'succeeded');
    assert.ok((a?.durationMs ?? 0) >= 1_450, `ran ${a?.durationMs} ms, i.e. past its 600 ms timeout twice`);
    assert.equal(done.attempts, 1);
  });
});

await describeEachKind('a handler that ignores its abort signal', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('slot freed after abortGraceMs with job.abandoned; the lease is kept until the handler returns, then the attempt is recorded as timed out, late result discarded', async () => {
    const late = deferred();
    let lateReturned = false;
    let secondRanWhileFirstStillRunning: boolean | undefined;
    const { client, worker } = await h.serve(
      [
        defineJob({
          type: 'deaf',
          timeoutMs: 150,
          maxAttempts: 1,
          handler: async () => {
            await late.promise; // never looks at ctx.signal
            lateReturned = true;
            return 'late success';
          },
        }),
        defineJob({
          type: 'next',
          handler: () => {
            secondRanWhileFirstStillRunning = !lateReturned;
          },
        }),
      ],
      { concurrency: 1, bufferSize: 0, abortGraceMs: 250 },
    );
    const deaf = await client.enqueue('deaf', {});
    await h.waitStatus(deaf.id, 'running');
    const next = await client.enqueue('next', {});

    // Timed out at ~150 ms; past the grace its slot is freed while the handler still runs.
    const abandoned = await h.waitEvent('job.abandoned', deaf.id, 3_000);
    assert.equal(abandoned.level, 40, 'a warning');
    assert.equal(abandoned.graceMs, 250);
    assert.equal(abandoned.leaseKept, true);

    // The only slot is free again: the second job runs before the first handler returns.
    await h.waitStatus(next.id, 'succeeded', 3_000);
    assert.equal(secondRanWhileFirstStillRunning, true);
    // ...while the first job stays held by its attempt: nothing is written while its handler runs
    const held = await h.client.getJob(deaf.id);
    assert.equal(held.status, 'running');
    assert.equal(held.lockedBy, worker.id);

    // Once it returns, the attempt is recorded as timed out; the late success changes nothing.
    late.resolve();
    const dead = await h.waitStatus(deaf.id, 'dead', 3_000);
    assert.equal(lateReturned, true);
    assert.equal(dead.lastErrorCode, 'TIMEOUT');
    const attempts = await h.client.listAttempts(deaf.id);
    assert.deepEqual(attempts.map((a) => a.outcome), ['timed_out']);
    assert.equal(h.log.count('job.succeeded', deaf.id), 0);
    await waitFor(() => worker.inFlight === 0, 3_000, 'the attempt to end');
  });
});
