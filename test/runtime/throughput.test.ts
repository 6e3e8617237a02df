/**
 * How the worker keeps its slots busy: a finished handler frees its slot before its outcome is
 * written (the lease stays held until then), and short jobs are claimed in larger batches than
 * long ones. Run on the memory storage with a wrapper that observes and delays storage calls.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ClaimParams, FinishParams, FinishResult, Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, deferred, waitFor } from './support.js';

/** The storage with claims recorded and finishes held until `release()` (when `hold` is on). */
function observed(storage: Storage) {
  const claims: number[] = [];
  let hold = false;
  let gate = deferred();
  const s = Object.create(storage) as Storage;
  s.claimJobs = (p: ClaimParams) => {
    claims.push(p.limit);
    return storage.claimJobs(p);
  };
  s.finishJobs = async (p: readonly FinishParams[], o?: { tx?: unknown }): Promise<FinishResult[]> => {
    if (hold) await gate.promise;
    return storage.finishJobs(p, o);
  };
  return {
    storage: s,
    claims,
    hold: () => {
      hold = true;
      gate = deferred();
    },
    release: () => {
      hold = false;
      gate.resolve();
    },
  };
}

describe('worker throughput', () => {
  const harnesses: Harness[] = [];
  after(() => Promise.all(harnesses.map((h) => h.close())));

  test('the next job starts while the previous outcome is still being written', async () => {
    const h = await Harness.open('memory');
    harnesses.push(h);
    const o = observed(h.storage);
    const started: string[] = [];
    const job = defineJob({ type: 'quick', handler: (p: { n: number }) => void started.push(String(p.n)) });
    o.hold();
    const a = await h.client.enqueue('quick', { n: 1 });
    const b = await h.client.enqueue('quick', { n: 2 });
    const w = await h.worker([job], { storage: o.storage, concurrency: 1, bufferSize: 1 });
    try {
      await waitFor(() => started.length === 2, 3_000, 'both jobs to start with concurrency 1');
      // neither outcome has landed: both leases are still held, and heartbeats keep them
      assert.equal((await h.storage.getJob(a.id))?.status, 'running');
      assert.equal((await h.storage.getJob(b.id))?.status, 'running');
      assert.equal(w.inFlight, 2);
    } finally {
      o.release();
    }
    await h.waitStatus(a.id, 'succeeded');
    await h.waitStatus(b.id, 'succeeded');
    await waitFor(() => w.inFlight === 0, 3_000, 'the worker to let go of both');
  });

  test('stop() waits for outcomes still being written', async () => {
    const h = await Harness.open('memory');
    harnesses.push(h);
    const o = observed(h.storage);
    const job = defineJob({ type: 'quick', handler: () => {} });
    o.hold();
    const a = await h.client.enqueue('quick', {});
    const w = await h.worker([job], { storage: o.storage, concurrency: 1 });
    await waitFor(() => w.inFlight === 1, 3_000, 'the job to be claimed');
    const stopping = w.stop({ deadlineMs: 2_000 });
    setTimeout(() => o.release(), 100);
    const report = await stopping;
    assert.deepEqual(report.handedBack, [], 'a job whose handler returned is not aborted');
    assert.equal((await h.storage.getJob(a.id))?.status, 'succeeded');
  });

  test('short jobs are claimed in batches far larger than the concurrency; slow ones are not', async () => {
    const h = await Harness.open('memory');
    harnesses.push(h);
    const o = observed(h.storage);
    let done = 0;
    const quick = defineJob({ type: 'quick', handler: () => void done++ });
    await h.client.enqueueMany(Array.from({ length: 3_000 }, () => ({ type: 'quick', payload: {} })));
    await h.worker([quick], { storage: o.storage, concurrency: 4 });
    await waitFor(() => done === 3_000, 10_000, 'the drain');
    assert.equal(o.claims[0], 8, 'before any job ran: 4 slots + 4 buffered');
    assert.ok(Math.max(...o.claims) >= 100, `claims grew with short jobs: ${o.claims.slice(0, 20).join(', ')}`);

    const h2 = await Harness.open('memory');
    harnesses.push(h2);
    const o2 = observed(h2.storage);
    let done2 = 0;
    const slow = defineJob({ type: 'slow', handler: () => new Promise<void>((r) => setTimeout(() => void (done2++, r()), 40)) });
    await h2.client.enqueueMany(Array.from({ length: 24 }, () => ({ type: 'slow', payload: {} })));
    await h2.worker([slow], { storage: o2.storage, concurrency: 4 });
    await waitFor(() => done2 === 24, 10_000, 'the slow drain');
    assert.ok(Math.max(...o2.claims) <= 8, `40 ms jobs keep the buffer at one per slot: ${o2.claims.join(', ')}`);
  });
});
