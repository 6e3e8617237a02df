/**
 * A lease the worker cannot renew is given up when it lapses (DESIGN §2.2): the handler is
 * aborted with LEASE_LOST, because from that moment another worker may hold the job. This
 * holds whether the renewal fails or never answers at all (a starved pool, a server that
 * stopped responding), and heartbeats carry on once the database answers again.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, describeEachKind, overriding, waitFor } from './support.js';

await describeEachKind('leases that cannot be renewed', STORAGE_KINDS, (kind) => {
  // renewals every third of the lease: against a busy server a 100 ms round trip is not rare
  const LEASE_MS = kind === 'memory' || kind === 'sqlite' ? 300 : 1_000;
  let h: Harness;
  before(async () => {
    h = await Harness.open(kind);
  });
  after(() => h.close());

  for (const how of ['fail', 'never answer'] as const) {
    test(`heartbeats that ${how}: the handler is aborted (LEASE_LOST) once its lease lapses, and renewals resume after`, async () => {
      let broken = false;
      let beats = 0;
      const storage = overriding(h.storage, 'leases', 'heartbeat', (heartbeat) => (p) => {
        beats++;
        if (!broken) return heartbeat(p);
        return how === 'fail' ? Promise.reject(new Error('connection refused')) : new Promise(() => {});
      });
      const failedBefore = h.log.count('heartbeat.failed');
      const recoveredBefore = h.log.count('heartbeat.recovered');
      const reasons = new Map<string, AbortReason>();
      const started = new Set<string>();
      const type = `lapse-${how.replace(' ', '-')}`;
      const def = defineJob({
        type,
        maxAttempts: 5,
        timeoutMs: 60_000,
        maxRuntimeMs: 60_000,
        handler: (_p, ctx) =>
          new Promise<void>((resolve, reject) => {
            started.add(ctx.job.id);
            let settled = false;
            // an abort once the handler has returned (a renewal that crossed its finish) stops nothing of it
            const aborted = () => settled || (reasons.set(ctx.job.id, ctx.signal.reason as AbortReason), reject(ctx.signal.reason));
            ctx.signal.addEventListener('abort', aborted, { once: true });
            // the second job finishes on its own after several lease lengths
            if (ctx.job.payload === 'long') setTimeout(() => ((settled = true), resolve()), LEASE_MS * 4);
          }),
      });
      const { client } = await h.serve([def], { storage, leaseMs: LEASE_MS, concurrency: 1 });
      const first = await client.enqueue(type, 'stuck');
      // started, not only claimed: the lapse aborts a running handler
      await waitFor(() => started.has(first.id), 3_000, 'the first handler to start');
      // renewals land while the database answers
      const before = beats;
      await waitFor(() => beats >= before + 2, 3_000, 'two renewals');
      assert.equal(reasons.size, 0, 'not aborted while renewals land');

      broken = true;
      // the abort is a timer at the lease's local expiry, which a busy machine runs late: no bound on when
      await waitFor(() => reasons.get(first.id), LEASE_MS * 10, 'the handler to be aborted after its lease lapsed');
      assert.equal(reasons.get(first.id)?.code, 'LEASE_LOST');
      assert.equal(h.log.count('heartbeat.failed') - failedBefore, 1, 'one error line for the outage');

      // the database answers again: a job running for several lease lengths keeps its lease
      broken = false;
      const second = await client.enqueue(type, 'long');
      await h.waitStatus(second.id, 'succeeded', LEASE_MS * 12);
      assert.equal(reasons.has(second.id), false, `the second job was never aborted while it ran (${reasons.get(second.id)?.message})`);
      assert.ok(h.log.count('heartbeat.recovered') > recoveredBefore, 'the recovery is logged');
    });
  }

  test('a renewal still out when the worker stops does not start the heartbeat loop again', async () => {
    let hang = false;
    let inFlight = 0;
    let workerBeats = 0;
    const hanging = overriding(h.storage, 'leases', 'heartbeat', (heartbeat) => (p) => (hang ? (inFlight++, new Promise(() => {})) : heartbeat(p)));
    const storage = overriding(hanging, 'workers', 'heartbeat', (beat) => (p) => (workerBeats++, beat(p)));
    const def = defineJob({ type: 'lapse-stop', maxAttempts: 5, timeoutMs: 60_000, handler: (_p, ctx) => new Promise<void>((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true })) });
    const { client, worker } = await h.serve([def], { storage, leaseMs: LEASE_MS, concurrency: 1, shutdownDeadlineMs: 50 });
    const job = await client.enqueue('lapse-stop', {});
    await h.waitStatus(job.id, 'running');
    hang = true;
    await waitFor(() => inFlight > 0, 3_000, 'a renewal to be out');
    await worker.stop();
    const after = workerBeats;
    // the renewal gives up at the lease's lapse; a loop started again would beat every 100 ms
    await new Promise((r) => setTimeout(r, LEASE_MS * 4));
    assert.equal(workerBeats, after, 'no heartbeat after stop()');
  });
});

