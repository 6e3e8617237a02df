/**
 * No job starts after stop() is called: the jobs waiting in the worker's local buffer are taken
 * out and handed back at once, even while stop() still waits for a scheduler tick in flight,
 * and a slot freed meanwhile starts nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Harness, deferred, overriding, waitFor } from './support.js';

for (const kind of ['memory', 'sqlite'] as const) {
  describe(`stop() and the local buffer (${kind})`, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(() => h.close());

    test('a slot freed while stop() waits for a scheduler tick starts none of the buffered jobs; they are handed back', async () => {
      const tick = deferred();
      let ticks = 0;
      // a scheduler tick that stays out until the test lets it answer
      const storage = overriding(h.storage, 'schedules', 'due', (due) => async (p) => {
        ticks++;
        await tick.promise;
        return due(p);
      });
      const release = deferred();
      const started: string[] = [];
      const def = defineJob({
        type: 'buffered',
        maxAttempts: 1,
        handler: async (_p, ctx) => {
          started.push(ctx.job.id);
          await release.promise;
        },
      });
      const { client, worker } = await h.serve([def], { storage, concurrency: 1, bufferSize: 6, schedulerIntervalMs: 10 });
      const jobs = await client.enqueueMany(Array.from({ length: 7 }, (_, i) => ({ type: 'buffered', payload: { i } })));
      await waitFor(() => started.length === 1 && worker.inFlight === 7, 5_000, 'one job running and six buffered');
      await waitFor(() => ticks > 0, 5_000, 'a scheduler tick to be out');

      const stopping = worker.stop({ deadlineMs: 10_000 });
      // the running job ends: its slot is free while stop() still waits for the tick
      release.resolve();
      const first = started[0] as string;
      await h.waitStatus(first, 'succeeded');
      assert.deepEqual(started, [first], 'no buffered job started after stop()');
      tick.resolve();
      const report = await stopping;
      assert.deepEqual(started, [first]);
      assert.deepEqual([...report.unstarted].sort(), jobs.map((j) => j.id).filter((id) => id !== first).sort());
      for (const j of jobs.filter((x) => x.id !== first)) {
        const row = await h.job(j.id);
        assert.equal(row.status, 'queued', `job ${j.id} handed back`);
        assert.equal(row.attempts, 0);
      }
    });
  });
}
