/**
 * The completer: finishes that arrive together share one write, a second write runs only for a
 * large backlog and never more than two at once, idle() waits for every write, and a write
 * that keeps failing rejects its callers (the leases then lapse and the sweeper retries).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import type { FinishParams, FinishResult, Storage } from '../../src/core/storage.js';
import { Completer } from '../../src/runtime/completer.js';
import { deferred, waitFor } from './support.js';

const log = pino({ level: 'silent' });
const item = (i: number): FinishParams => ({ id: String(i), leaseToken: `t${i}`, status: 'succeeded', attempt: { outcome: 'succeeded' } });

/** A storage whose finish writes are held until released, recording each batch's size. */
function heldStorage() {
  const batches: number[] = [];
  const gates: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const storage = {
    leases: { finish: async ({ items: p }: { items: readonly FinishParams[] }): Promise<FinishResult[]> => {
      batches.push(p.length);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const g = deferred();
      gates.push(g.resolve);
      await g.promise;
      inFlight--;
      return p.map((f) => ({ id: f.id, applied: true }));
    } },
  } as unknown as Storage;
  return { storage, batches, gates, maxInFlight: () => maxInFlight, releaseAll: () => gates.splice(0).forEach((r) => r()) };
}

describe('completer', () => {
  test('finishes of one tick share a write; small ones wait for it; a backlog of 100+ gets a second write, never a third', async () => {
    const s = heldStorage();
    const c = new Completer(s.storage, log);
    const all: Promise<FinishResult>[] = [];
    for (let i = 0; i < 5; i++) all.push(c.finish(item(i)));
    await waitFor(() => s.batches.length === 1, 2_000, 'the first write');
    assert.deepEqual(s.batches, [5]);
    // 20 more while the first is in flight: too few for a second write
    for (let i = 5; i < 25; i++) all.push(c.finish(item(i)));
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(s.batches, [5], 'a small batch waits for the write in flight');
    // a backlog of 100+: a second write starts, and a third never does
    for (let i = 25; i < 400; i++) all.push(c.finish(item(i)));
    await waitFor(() => s.batches.length === 2, 2_000, 'the second write');
    assert.equal(s.batches[1], 395);
    for (let i = 400; i < 600; i++) all.push(c.finish(item(i)));
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(s.batches.length, 2, 'never more than two writes at once');
    let idle = false;
    void c.idle().then(() => (idle = true));
    while (s.batches.reduce((a, b) => a + b, 0) < 600 || s.gates.length > 0) {
      s.releaseAll();
      await new Promise((r) => setTimeout(r, 5));
    }
    const results = await Promise.all(all);
    assert.equal(results.length, 600);
    assert.ok(results.every((r, i) => r.applied && r.id === String(i)));
    await waitFor(() => idle, 2_000, 'idle() after the last write');
    assert.equal(s.maxInFlight(), 2);
  });

  test('a write that keeps failing is retried, then rejects its callers', async () => {
    let calls = 0;
    const storage = {
      leases: {
        finish: async () => {
          calls++;
          throw new Error('database away');
        },
      },
    } as unknown as Storage;
    const c = new Completer(storage, log);
    await assert.rejects(c.finish(item(1)), /database away/);
    assert.equal(calls, 5, 'the first try and four retries');
    await c.idle();
  });
});
