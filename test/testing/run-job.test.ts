/**
 * runJob (leasehold/testing): one attempt of a handler with a recording fake context, and what
 * the worker would record for it — from the definition's policies and schema.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { LeaseLostError, cancel, defineJob, fail, snooze } from '../../src/index.js';
import { runJob } from '../../src/testing/index.js';

describe('runJob', () => {
  test('a success: the definition\'s policies in ctx.job; a payload enqueue refuses is refused', async () => {
    const job = defineJob({
      type: 'greet',
      queue: 'mail',
      priority: 3,
      maxAttempts: 7,
      timeoutMs: 1_000,
      handler: (p: { name: string; at?: unknown }, ctx) => ({ greeting: `hello ${p.name}`, attempt: ctx.attempt, queue: ctx.job.queue }),
    });
    const run = await runJob(job, { name: 'ada' });
    assert.equal(run.status, 'succeeded');
    assert.deepEqual(run.value, { greeting: 'hello ada', attempt: 1, queue: 'mail' });
    assert.equal(run.error, undefined);
    assert.deepEqual([run.job.type, run.job.priority, run.job.maxAttempts, run.job.timeoutMs], ['greet', 3, 7, 1_000]);
    const named = await runJob(job, { name: 'bo' }, { job: { id: '42', queue: 'bulk' } });
    assert.deepEqual([named.job.id, (named.value as { queue: string }).queue], ['42', 'bulk']);
    // what enqueue would refuse never reaches the handler
    await assert.rejects(runJob(job, { name: 'ada', at: new Date() }), { code: 'INVALID_PAYLOAD', message: /payload.at is a Date/ });
  });

  test('a throw is a retry until the last attempt, then dead; the retry delay follows the policy', async () => {
    const job = defineJob({
      type: 'flaky',
      maxAttempts: 3,
      retry: { kind: 'fixed', delayMs: 5_000 },
      handler: () => {
        throw new Error('smtp down');
      },
    });
    const first = await runJob(job, {});
    assert.equal(first.status, 'failed');
    assert.equal(first.retryDelayMs, 5_000);
    assert.equal((first.error as Error).message, 'smtp down');
    assert.equal(first.errorInfo?.message, 'smtp down');
    const last = await runJob(job, {}, { attempt: 3 });
    assert.equal(last.status, 'dead');
    assert.equal(last.retryDelayMs, null);
  });

  test('snooze, cancel and fail outcomes', async () => {
    const outcome = defineJob({
      type: 'outcome',
      handler: (p: { kind: string }) => (p.kind === 'snooze' ? snooze(60_000) : p.kind === 'cancel' ? cancel('not needed') : fail('bad data')),
    });
    const snoozed = await runJob(outcome, { kind: 'snooze' });
    assert.deepEqual([snoozed.status, snoozed.delayMs], ['snoozed', 60_000]);
    const cancelled = await runJob(outcome, { kind: 'cancel' });
    assert.deepEqual([cancelled.status, cancelled.errorInfo?.message], ['cancelled', 'not needed']);
    const failed = await runJob(outcome, { kind: 'fail' });
    assert.deepEqual([failed.status, failed.errorInfo?.code], ['dead', 'PERMANENT_FAILURE']);
  });

  test('a payload its schema refuses is dead without running the handler', async () => {
    let ran = 0;
    const job = defineJob({
      type: 'typed',
      schema: z.object({ to: z.string().email() }),
      handler: () => void ran++,
    });
    const run = await runJob(job, { to: 'not an address' } as { to: string });
    assert.equal(run.status, 'dead');
    assert.match(run.errorInfo?.message ?? '', /payload for typed does not match its schema: to:/);
    assert.equal(ran, 0);
    assert.equal((await runJob(job, { to: 'a@example.com' })).status, 'succeeded');
    assert.equal(ran, 1);
  });

  test('ctx.once runs each effect once; the retry given the recorded effects skips them', async () => {
    let sent = 0;
    const job = defineJob({
      type: 'charge',
      handler: async (p: { fail: boolean }, ctx) => {
        const receipt = await ctx.once('charge:1', () => ({ receipt: ++sent }));
        await ctx.heartbeat();
        if (p.fail) throw new Error('after the charge');
        return receipt;
      },
    });
    const first = await runJob(job, { fail: true });
    assert.equal(first.status, 'failed');
    assert.deepEqual(first.once, [{ key: 'charge:1', ran: true, result: { receipt: 1 } }]);
    assert.equal(first.heartbeats, 1);
    const retry = await runJob(job, { fail: false }, { attempt: 2, effects: first.effects });
    assert.equal(retry.status, 'succeeded');
    assert.deepEqual(retry.once, [{ key: 'charge:1', ran: false, result: { receipt: 1 } }]);
    assert.deepEqual(retry.value, { receipt: 1 });
    assert.equal(sent, 1, 'the effect ran once over both attempts');
  });

  test('a lost lease: heartbeat throws LeaseLostError; an aborted signal stops once before its effect', async () => {
    const beat = defineJob({ type: 'beat', handler: (_p: object, ctx) => ctx.heartbeat() });
    const lost = await runJob(beat, {}, { leaseLost: true });
    assert.equal(lost.status, 'failed');
    assert.ok(lost.error instanceof LeaseLostError);

    let ran = 0;
    const effect = defineJob({ type: 'effect', handler: (_p: object, ctx) => ctx.once('e', () => void ran++) });
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    const aborted = await runJob(effect, {}, { signal: controller.signal });
    assert.equal(aborted.status, 'failed');
    assert.equal((aborted.error as Error).message, 'shutting down');
    assert.equal(ran, 0);
  });

  test('succeedInTransaction is recorded with its tx', async () => {
    const tx = { name: 'the caller\'s transaction' };
    const job = defineJob({ type: 'in-tx', handler: (_p: object, ctx) => ctx.succeedInTransaction(tx) });
    const run = await runJob(job, {});
    assert.deepEqual(run.succeededInTransaction, [tx]);
  });
});
