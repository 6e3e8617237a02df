/**
 * How the worker keeps its slots busy: a finished handler frees its slot before its outcome is
 * written (the lease stays held until then), and short jobs are claimed in larger batches than
 * long ones. Run on every storage with a wrapper that observes and delays storage calls.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ClaimParams, FinishResult, Storage } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, STORAGE_KINDS, deferred, describeEachKind, overriding, waitFor } from './support.js';

/** The storage with claims recorded, finish batch sizes recorded, and finishes held until `release()` (when `hold` is on). */
function observed(storage: Storage) {
  const claims: number[] = [];
  const finishes: number[] = [];
  let hold = false;
  let gate = deferred();
  const claiming = overriding(storage, 'leases', 'claim', (claim) => (p: ClaimParams) => {
    claims.push(p.limit);
    return claim(p);
  });
  const s = overriding(claiming, 'leases', 'finish', (finish) => async (p): Promise<FinishResult[]> => {
    finishes.push(p.items.length);
    if (hold) await gate.promise;
    return finish(p);
  });
  return {
    storage: s,
    claims,
    finishes,
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

await describeEachKind('worker throughput', STORAGE_KINDS, (kind) => {
  const harnesses: Harness[] = [];
  after(() => Promise.all(harnesses.map((h) => h.close())));

  test('the next job starts while the previous outcome is still being written', async () => {
    const h = await Harness.open(kind);
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
      assert.equal((await h.storage.jobs.get({ id: a.id }))?.status, 'running');
      assert.equal((await h.storage.jobs.get({ id: b.id }))?.status, 'running');
      assert.equal(w.inFlight, 2);
    } finally {
      o.release();
    }
    await h.waitStatus(a.id, 'succeeded');
    await h.waitStatus(b.id, 'succeeded');
    await waitFor(() => w.inFlight === 0, 3_000, 'the worker to let go of both');
  });

  test('stop() waits for outcomes still being written', async () => {
    const h = await Harness.open(kind);
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
    assert.equal((await h.storage.jobs.get({ id: a.id }))?.status, 'succeeded');
  });

  test('short jobs are claimed in batches far larger than the concurrency; slow ones are not', async () => {
    const h = await Harness.open(kind);
    harnesses.push(h);
    const o = observed(h.storage);
    let done = 0;
    const quick = defineJob({ type: 'quick', handler: () => void done++ });
    await h.client.enqueueMany(Array.from({ length: 3_000 }, () => ({ type: 'quick', payload: {} })));
    await h.worker([quick], { storage: o.storage, concurrency: 4 });
    await waitFor(() => done === 3_000, 60_000, 'the drain');
    assert.equal(o.claims[0], 8, 'before any job ran: 4 slots + 4 buffered');
    assert.ok(Math.max(...o.claims) >= 100, `claims grew with short jobs: ${o.claims.slice(0, 20).join(', ')}`);

    const h2 = await Harness.open(kind);
    harnesses.push(h2);
    const o2 = observed(h2.storage);
    let done2 = 0;
    const slow = defineJob({ type: 'slow', handler: () => new Promise<void>((r) => setTimeout(() => void (done2++, r()), 40)) });
    await h2.client.enqueueMany(Array.from({ length: 24 }, () => ({ type: 'slow', payload: {} })));
    await h2.worker([slow], { storage: o2.storage, concurrency: 4 });
    await waitFor(() => done2 === 24, 30_000, 'the slow drain');
    assert.ok(Math.max(...o2.claims) <= 8, `40 ms jobs keep the buffer at one per slot: ${o2.claims.join(', ')}`);
  });
});

// the synchronous SQLite driver answers within the same turn of the event loop, which is what this is about
describe('worker throughput, a driver that answers synchronously (sqlite)', () => {
  const harnesses: Harness[] = [];
  after(() => Promise.all(harnesses.map((h) => h.close())));

  test('on SQLite, instant handlers let the event loop turn during a drain, and their finishes are written in large batches', async () => {
    const h = await Harness.open('sqlite');
    harnesses.push(h);
    const o = observed(h.storage);
    const N = 3_000;
    let done = 0;
    // the jobs done when a zero-delay timer set as the drain starts fired: SQLite answers at once
    // and the handlers return at once, so before, claims and jobs chained on microtasks until
    // every due job had run, and the timer fired only after the last one
    let doneWhenTimerFired = -1;
    const instant = defineJob({ type: 'instant', handler: () => void done++ });
    await h.client.enqueueMany(Array.from({ length: N }, () => ({ type: 'instant', payload: {} })));
    await h.worker([instant], { storage: o.storage, concurrency: 10 });
    setTimeout(() => (doneWhenTimerFired = done), 0);
    await waitFor(() => done === N, 20_000, 'the drain');
    assert.ok(doneWhenTimerFired >= 0 && doneWhenTimerFired < N, `the timer fired when ${doneWhenTimerFired} of ${N} jobs were done`);
    await waitFor(async () => (await h.storage.queues.counts()).some((c) => c.status === 'succeeded' && c.count === N), 10_000, 'every outcome written');
    // before, each write took the 30 finishes of the three rounds of 10 that ran while the
    // previous write settled: about 100 writes for 3,000 jobs
    assert.ok(o.finishes.length <= N / 100, `${o.finishes.length} finish writes for ${N} jobs: ${o.finishes.slice(0, 15).join(', ')}…`);
  });
});
