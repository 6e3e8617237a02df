/**
 * A lost-lease or cancel answer reaches the job it is about, wherever that job is by then: a
 * job that moved from the local buffer to a slot while a renewal was out is aborted by that
 * renewal's answer, and an operator's cancel in this process drops a job still waiting in the
 * buffer (it never starts).
 *
 * The first test drives the heartbeater's timer by hand (node:test mock timers): the renewal
 * that is out stays out until the test answers it, and no lease can lapse meanwhile.
 */
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import type { AbortReason } from '../../src/core/index.js';
import type { HeartbeatResult } from '../../src/core/storage.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, deferred, overriding, waitFor } from './support.js';

/** Resolve once `predicate` holds, looking again on every turn of the event loop (no timers: they are mocked). */
async function turnsUntil(predicate: () => boolean | Promise<boolean>, what: string, turns = 100_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (await predicate()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`gave up waiting for ${what}`);
}

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`lease answers reach their job (${kind})`, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(() => h.close());

    test('a job that left the buffer for a slot while a renewal was out is aborted by its answer (CANCELLED)', async () => {
      mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const beats: { leases: string[]; answer: () => void }[] = [];
        // every renewal waits for the test to answer it
        const storage = overriding(h.storage, 'leases', 'heartbeat', (heartbeat) => (p) => {
          const out = deferred<Promise<HeartbeatResult>>();
          beats.push({ leases: p.leases.map((l) => l.id), answer: () => out.resolve(heartbeat(p)) });
          return out.promise.then((r) => r);
        });
        const releaseA = deferred();
        const reasons = new Map<string, AbortReason>();
        const started: string[] = [];
        const def = defineJob({
          type: 'moved',
          timeoutMs: 600_000,
          handler: (p: { n: number }, ctx) => {
            started.push(ctx.job.id);
            if (p.n === 0) return releaseA.promise;
            return new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => (reasons.set(ctx.job.id, ctx.signal.reason as AbortReason), resolve()), { once: true }));
          },
        });
        const { client, worker } = await h.serve([def], { storage, concurrency: 1, bufferSize: 1, leaseMs: 60_000, pollIntervalMs: 1_000_000 });
        const [a, b] = await client.enqueueMany([{ type: 'moved', payload: { n: 0 } }, { type: 'moved', payload: { n: 1 } }]);
        assert.ok(a && b);
        await turnsUntil(() => started.length === 1 && worker.inFlight === 2, 'A running and B buffered');
        // the heartbeater's timer fires: one renewal of both leases goes out and stays out
        mock.timers.tick(20_000);
        await turnsUntil(() => beats.length === 1, 'a renewal to be out');
        assert.deepEqual([...(beats[0]?.leases ?? [])].sort(), [a.id, b.id].sort());
        // B is cancelled behind the worker's back (no event in this process), then moves to the slot
        await h.storage.jobs.cancel({ id: b.id });
        releaseA.resolve();
        await turnsUntil(() => started.includes(b.id), 'B to start in the freed slot');
        // the renewal lands now: its answer says B's lease is gone, and the running attempt hears it
        beats[0]?.answer();
        await turnsUntil(() => reasons.has(b.id), 'B to be aborted');
        assert.equal(reasons.get(b.id)?.code, 'CANCELLED');
      } finally {
        mock.timers.reset();
      }
    });

    test('a job cancelled while it waits in the buffer never starts', async () => {
      const releaseA = deferred();
      const started: string[] = [];
      const def = defineJob({
        type: 'cancelled-buffered',
        handler: (p: { n: number }, ctx) => {
          started.push(ctx.job.id);
          if (p.n === 0) return releaseA.promise;
          return undefined;
        },
      });
      const { client, worker } = await h.serve([def], { concurrency: 1, bufferSize: 1, leaseMs: 60_000 });
      const [a, b] = await client.enqueueMany([{ type: def.type, payload: { n: 0 } }, { type: def.type, payload: { n: 1 } }]);
      assert.ok(a && b);
      await turnsUntil(() => started.length === 1 && worker.inFlight === 2, 'A running and B buffered');
      const cancelled = await client.cancel(b.id);
      assert.equal(cancelled.status, 'cancelled');
      releaseA.resolve();
      await h.waitStatus(a.id, 'succeeded');
      // A's slot was freed before its finish was written: B would have started by now
      assert.deepEqual(started, [a.id], 'the cancelled job never started');
      assert.equal((await h.job(b.id)).status, 'cancelled');
      // A's attempt leaves `running` (which inFlight counts) once its finish was written, a moment after the row reads succeeded
      await waitFor(() => worker.inFlight === 0, 2_000, "A's attempt to end");
    });
  });
}
