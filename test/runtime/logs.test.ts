/**
 * One JSON log line per event, with an `event` field and the job's id: claimed, succeeded,
 * failed (with attempt and nextDelayMs), dead, rescued, lease_lost.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, waitFor } from './support.js';

await describeEachKind('log events', STORAGE_KINDS, (kind) => {
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  test('job.claimed then job.succeeded, once each, as JSON lines with the job id', async () => {
    const { client, worker } = await h.serve([defineJob({ type: 'fine', handler: () => {} })]);
    const job = await client.enqueue('fine', {}, { queue: 'q1' });
    await h.waitStatus(job.id, 'succeeded');
    const ok = await h.waitEvent('job.succeeded', job.id);
    const claimed = h.log.events('job.claimed', job.id);
    assert.equal(claimed.length, 1);
    assert.equal(claimed[0]?.type, 'fine');
    assert.equal(claimed[0]?.attempt, 1);
    assert.equal(claimed[0]?.queue, 'q1');
    assert.equal(claimed[0]?.workerId, worker.id);
    assert.equal(h.log.count('job.succeeded', job.id), 1);
    assert.equal(ok.attempt, 1);
    assert.equal(typeof ok.durationMs, 'number');
    assert.equal(ok.level, 30);
    assert.ok(h.log.entries.indexOf(claimed[0] as never) < h.log.entries.indexOf(ok as never), 'claimed comes first');
  });

  test('job.failed carries attempt and nextDelayMs (= the attempt row), then job.dead', async () => {
    const { client } = await h.serve([
      defineJob({
        type: 'bad',
        maxAttempts: 2,
        retry: { kind: 'exponential', baseMs: 30, maxMs: 1_000, jitter: 'full' },
        handler: () => {
          throw new Error('nope');
        },
      }),
    ]);
    const job = await client.enqueue('bad', {});
    await h.waitStatus(job.id, 'dead');
    // the line is written once the outcome has landed, a moment after the row reads dead
    await h.waitEvent('job.dead', job.id);
    const failed = h.log.events('job.failed', job.id);
    const dead = h.log.events('job.dead', job.id);
    assert.equal(failed.length, 1);
    assert.equal(dead.length, 1);
    const attempts = await h.client.listAttempts(job.id);
    assert.equal(failed[0]?.attempt, 1);
    assert.equal(failed[0]?.nextDelayMs, attempts[0]?.retryDelayMs);
    assert.equal(failed[0]?.error, 'nope');
    assert.equal(failed[0]?.level, 40);
    assert.equal(dead[0]?.attempt, 2);
    assert.equal(dead[0]?.level, 50);
    assert.equal(dead[0]?.error, 'nope');
    assert.equal(h.log.count('job.claimed', job.id), 2);
  });

  test('job.rescued names the expired holder and the new status', async () => {
    const def = defineJob({ type: 'orphaned', retry: { kind: 'fixed', delayMs: 0 }, handler: () => {} });
    const job = await h.clientWith([def]).enqueue('orphaned', {});
    await h.claimAs('crashed-host:99', 'orphaned', 50);
    await h.worker([def], { sweeper: true, sweepIntervalMs: 25 });
    const ev = await h.waitEvent('job.rescued', job.id);
    assert.equal(ev.lockedBy, 'crashed-host:99');
    assert.equal(ev.status, 'failed');
    assert.equal(ev.attempt, 1);
    await h.waitStatus(job.id, 'succeeded');
    assert.equal(h.log.count('job.rescued', job.id), 1);
  });

  test('job.lease_lost when the outcome cannot be recorded: the result is discarded', async () => {
    const gate = deferred();
    const { client } = await h.serve([defineJob({ type: 'zombie', handler: () => gate.promise })]);
    const job = await client.enqueue('zombie', {});
    const running = await h.waitStatus(job.id, 'running');
    // someone else took the job over (as a sweeper does after the lease lapsed)
    await h.storage.leases.finish({ items: [
      { id: job.id, leaseToken: running.leaseToken as string, status: 'queued', runAfterMs: 60_000, attempt: { outcome: 'lease_expired' } },
    ] });
    gate.resolve();
    const ev = await h.waitEvent('job.lease_lost', job.id);
    assert.equal(ev.outcome, 'succeeded', 'the outcome it tried to write');
    assert.equal(ev.level, 40);
    const row = await h.job(job.id);
    assert.equal(row.status, 'queued', 'the success was not written');
    assert.equal(h.log.count('job.succeeded', job.id), 0);
  });

  test('job.lease_lost when a heartbeat finds the lease gone: the handler is aborted with LEASE_LOST', async () => {
    let reason: AbortReason | undefined;
    const started = deferred();
    const { client, worker } = await h.serve(
      [
        defineJob({
          type: 'zombie-2',
          handler: (_p, ctx) =>
            new Promise((_, reject) => {
              ctx.signal.addEventListener('abort', () => reject((reason = ctx.signal.reason as AbortReason)), { once: true });
              started.resolve();
            }),
        }),
      ],
      { leaseMs: 150 },
    );
    const job = await client.enqueue('zombie-2', {});
    // the handler runs (not only claimed) when the lease is taken from it
    await started.promise;
    const running = await h.job(job.id);
    await h.storage.leases.finish({ items: [
      { id: job.id, leaseToken: running.leaseToken as string, status: 'queued', runAfterMs: 60_000, attempt: { outcome: 'lease_expired' } },
    ] });
    await waitFor(() => reason, 2_000, 'the heartbeat to notice');
    assert.equal(reason?.code, 'LEASE_LOST');
    await h.waitEvent('job.lease_lost', job.id);
    await waitFor(() => worker.inFlight === 0, 2_000, 'the slot to be freed');
    assert.equal((await h.job(job.id)).status, 'queued');
  });
});
