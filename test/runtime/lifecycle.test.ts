/**
 * The life of a job through a real worker: success, retryable failure with backoff inside the
 * policy's jitter band, death after maxAttempts, permanent failure, snooze and cancel outcomes.
 * Run on every storage.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { RetryPolicy } from '../../src/core/index.js';
import { PermanentFailure, cancel, fail, jitterBand, snooze } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind, waitFor } from './support.js';

await describeEachKind('job lifecycle', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('enqueue → worker runs it → succeeded, one succeeded attempt row', async () => {
    const seen: unknown[] = [];
    const { client } = await h.serve([defineJob({ type: 'ok', handler: (p, ctx) => void seen.push({ p, attempt: ctx.attempt }) })]);
    const job = await client.enqueue('ok', { n: 1 });
    assert.equal(job.status, 'queued');
    assert.equal(job.created, true);
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.deepEqual(seen, [{ p: { n: 1 }, attempt: 1 }]);
    assert.equal(done.attempts, 1);
    assert.ok(done.finishedAt, 'finished_at is set');
    assert.equal(done.leaseToken, null);
    assert.equal(done.lockedBy, null);
    const attempts = await h.client.listAttempts(job.id);
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]?.outcome, 'succeeded');
    assert.equal(attempts[0]?.attempt, 1);
    assert.equal(attempts[0]?.workerId, h.workers.at(-1)?.id);
    assert.ok((attempts[0]?.durationMs ?? -1) >= 0);
  });

  test('a throw → failed, run_at in the future, retryDelayMs inside the jitter band', async () => {
    const policy: RetryPolicy = { kind: 'exponential', baseMs: 60_000, factor: 2, maxMs: 600_000, jitter: 'equal' };
    const { client } = await h.serve([
      defineJob({
        type: 'flaky',
        retry: policy,
        maxAttempts: 3,
        handler: () => {
          throw new Error('boom');
        },
      }),
    ]);
    const job = await client.enqueue('flaky', {});
    const failed = await h.waitStatus(job.id, 'failed');
    const now = await h.storage.now();
    assert.equal(failed.attempts, 1);
    assert.equal(failed.lastErrorCode, 'Error');
    assert.equal(failed.lastError, 'boom');
    assert.equal(failed.leaseToken, null);
    assert.equal(failed.finishedAt, null, 'a job that will retry is not finished');
    const [a] = await h.client.listAttempts(job.id);
    assert.equal(a?.outcome, 'failed');
    assert.equal(a?.errorMessage, 'boom');
    assert.match(a?.errorStack ?? '', /boom/);
    const band = jitterBand(policy, 1);
    const delay = a?.retryDelayMs ?? -1;
    assert.ok(delay >= band.min && delay <= band.max, `retryDelayMs ${delay} not in [${band.min}, ${band.max}]`);
    assert.ok(failed.runAt.getTime() > now.getTime(), 'run_at is in the future');
    // run_at = the database's now at the finish + the delay the attempt row records
    const gap = failed.runAt.getTime() - failed.updatedAt.getTime();
    assert.ok(Math.abs(gap - delay) <= 5, `run_at - updated_at = ${gap}, attempt says ${delay}`);
  });

  test('retries until maxAttempts, then dead', async () => {
    let calls = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'always-fails',
        retry: { kind: 'fixed', delayMs: 10 },
        maxAttempts: 3,
        handler: () => {
          calls++;
          throw new Error(`fail #${calls}`);
        },
      }),
    ]);
    const job = await client.enqueue('always-fails', {});
    const dead = await h.waitStatus(job.id, 'dead');
    assert.equal(calls, 3);
    assert.equal(dead.attempts, 3);
    assert.equal(dead.lastError, 'fail #3');
    assert.ok(dead.finishedAt);
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(
      attempts.map((x) => [x.attempt, x.outcome, x.retryDelayMs]),
      [
        [1, 'failed', 10],
        [2, 'failed', 10],
        [3, 'dead', null],
      ],
    );
  });

  test('PermanentFailure thrown, or fail() returned → dead after one attempt', async () => {
    const { client } = await h.serve([
      defineJob({
        type: 'perm-throw',
        maxAttempts: 5,
        handler: () => {
          throw new PermanentFailure('card declined');
        },
      }),
      defineJob({ type: 'perm-return', maxAttempts: 5, handler: () => fail('no such customer') }),
    ]);
    const a = await client.enqueue('perm-throw', {});
    const b = await client.enqueue('perm-return', {});
    const deadA = await h.waitStatus(a.id, 'dead');
    const deadB = await h.waitStatus(b.id, 'dead');
    for (const [d, msg] of [
      [deadA, 'card declined'],
      [deadB, 'no such customer'],
    ] as const) {
      assert.equal(d.attempts, 1);
      assert.equal(d.lastErrorCode, 'PERMANENT_FAILURE');
      assert.equal(d.lastError, msg);
      const attempts = await h.client.listAttempts(d.id);
      assert.deepEqual(
        attempts.map((x) => [x.outcome, x.errorCode]),
        [['dead', 'PERMANENT_FAILURE']],
      );
    }
  });

  test('snooze(ms) → queued later, the attempt is not counted; it then runs again', async () => {
    let calls = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'snoozer',
        maxAttempts: 1,
        handler: () => {
          calls++;
          return calls === 1 ? snooze(300) : undefined;
        },
      }),
    ]);
    const job = await client.enqueue('snoozer', {});
    // the handler ran before the row is read: a queued row is then the snoozed one, not the enqueued one
    const snoozed = await waitFor(
      async () => {
        if (calls !== 1) return null;
        const j = await h.job(job.id);
        return j.status === 'queued' ? j : null;
      },
      5_000,
      'the snooze to land',
    );
    assert.ok(snoozed.runAt.getTime() - snoozed.updatedAt.getTime() >= 290, 'run_at moved ~300 ms later');
    assert.equal(snoozed.leaseToken, null);
    // maxAttempts is 1: had the snooze counted, there would be no attempt left
    const done = await h.waitStatus(job.id, 'succeeded');
    assert.equal(calls, 2);
    assert.equal(done.attempts, 1);
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(
      attempts.map((x) => [x.attempt, x.outcome, x.retryDelayMs]),
      [
        [1, 'snoozed', 300],
        [1, 'succeeded', null],
      ],
    );
  });

  test('cancel() outcome → cancelled, not retried', async () => {
    let calls = 0;
    const { client } = await h.serve([
      defineJob({
        type: 'self-cancel',
        maxAttempts: 5,
        handler: () => {
          calls++;
          return cancel('customer closed the account');
        },
      }),
    ]);
    const job = await client.enqueue('self-cancel', {});
    const c = await h.waitStatus(job.id, 'cancelled');
    assert.equal(c.lastErrorCode, 'CANCELLED');
    assert.equal(c.lastError, 'customer closed the account');
    assert.ok(c.finishedAt);
    const attempts = await h.client.listAttempts(job.id);
    assert.deepEqual(attempts.map((x) => x.outcome), ['cancelled']);
    assert.equal(calls, 1);
  });
});
