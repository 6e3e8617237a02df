/**
 * Per-type cluster-wide concurrency: a type with `globalConcurrency: 2` never has 3 jobs running
 * at once, across three workers on one database (each its own connection, as three processes
 * would have; on memory, one shared instance), each allowed 5 at once. The claim leaves jobs over
 * the cap due: none is claimed and handed back, so each job has exactly one attempt row.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, sleep, waitFor } from './support.js';

await describeEachKind('cluster-wide cap per job type', STORAGE_KINDS, (kind) => {
  const workers: Worker[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const w of workers) await w.stop({ deadlineMs: 500 });
    for (const c of cleanups) await c();
  });

  test('globalConcurrency 2: never 3 running across 3 workers of concurrency 5; no job claimed over the cap', { timeout: 60_000 }, async () => {
    const { storage: main, another, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const log = new LogCapture();
    let running = 0;
    let maxRunning = 0;
    let started = 0;
    // the cap is reached whatever the timing: the first job waits for a second to run beside it
    let secondStarted!: () => void;
    const second = new Promise<void>((r) => (secondStarted = r));
    const spans: { id: string; start: number; end: number }[] = [];
    const report = defineJob({
      type: 'report',
      globalConcurrency: 2,
      maxAttempts: 1,
      handler: async (_p: unknown, ctx) => {
        running++;
        started++;
        maxRunning = Math.max(maxRunning, running);
        const start = Date.now();
        if (started === 2) secondStarted();
        if (started === 1) await second;
        await sleep(20);
        spans.push({ id: ctx.job.id, start, end: Date.now() });
        running--;
      },
    });
    const client = new Client({ storage: main, jobs: [report] });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await client.enqueue('report', { i })).id);
    for (let i = 0; i < 3; i++) {
      const w = new Worker({ storage: await another(), jobs: [report], concurrency: 5, pollIntervalMs: 20, leaseMs: 5_000, sweeper: false, scheduler: false, logger: log.logger });
      workers.push(w);
      await w.start();
    }
    const rows = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => main.jobs.get({ id })));
        return all.every((j) => j?.status === 'succeeded' || j?.status === 'dead' || j?.status === 'failed') ? all : null;
      },
      45_000,
      'every report job to finish',
    );
    for (const j of rows) {
      assert.equal(j?.status, 'succeeded', `job ${j?.id} succeeded (${j?.lastError ?? ''})`);
      assert.equal(j?.attempts, 1, `job ${j?.id}: only the attempt that ran is counted`);
    }
    assert.equal(spans.length, 12, 'every job ran exactly once');
    assert.equal(maxRunning, 2, 'at most 2 report jobs at once (and the cap was reached)');
    // the same from the recorded spans: no instant with 3 overlapping
    const events = spans.flatMap((s) => [[s.start, 1], [s.end, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let cur = 0;
    for (const [, d] of events) assert.ok((cur += d) <= 2, 'never 3 spans overlap');
    for (const id of ids) {
      const attempts = await main.attempts.list({ jobId: id });
      assert.deepEqual(attempts.map((a) => a.outcome), ['succeeded'], `job ${id}: one attempt, never bounced`);
    }
  });
});
