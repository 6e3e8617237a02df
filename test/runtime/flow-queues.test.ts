/**
 * Limits per queue through the public API, on every storage: a Worker's `queueLimits` caps the
 * queue's running jobs over all its types (the claim leaves the rest due: every job has one
 * attempt), while another queue runs freely; bad limits are a ValidationError from the constructor.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ValidationError } from '../../src/core/errors.js';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, waitFor } from './support.js';

await describeEachKind('queue limits through the API', STORAGE_KINDS, (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups) await c();
  });

  test("queueLimits: at most maxRunning of the queue's jobs of every type at once; another queue is not held back", { timeout: 60_000 }, async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const running = new Map<string, number>();
    const worst = new Map<string, number>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handler = async (_p: unknown, ctx: { job: { queue: string } }) => {
      const q = ctx.job.queue;
      running.set(q, (running.get(q) ?? 0) + 1);
      worst.set(q, Math.max(worst.get(q) ?? 0, running.get(q)!));
      await gate;
      running.set(q, running.get(q)! - 1);
    };
    const jobs = [defineJob({ type: 'render', queue: 'reports', handler }), defineJob({ type: 'export', queue: 'reports', handler })];
    const client = new Client({ storage, jobs });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await client.enqueue('render', { i })).id, (await client.enqueue('export', { i })).id);
      ids.push((await client.enqueue('render', { i }, { queue: 'other' })).id);
    }
    const claims: number[] = [];
    const worker = new Worker({
      storage, jobs, concurrency: 10, pollIntervalMs: 20, sweeper: false, scheduler: false, logger: new LogCapture().logger,
      queueLimits: { reports: { maxRunning: 2 } }, observers: [{ claimed: (n) => claims.push(n) }],
    });
    await worker.start();
    try {
      // the handlers hold their slots until the queue is full and a later claim came back empty
      await waitFor(() => running.get('reports') === 2 && running.get('other') === 3, 10_000, 'two reports and three others running');
      const seen = claims.length;
      await waitFor(() => claims.slice(seen).includes(0), 10_000, 'an empty claim while the queue is full');
      release();
      await waitFor(async () => (await storage.jobs.list({ status: 'succeeded', limit: 20 })).length === 9, 30_000, 'every job to succeed');
    } finally {
      await worker.stop({ deadlineMs: 2_000 });
    }
    assert.deepEqual(Object.fromEntries(worst), { reports: 2, other: 3 });
    for (const id of ids) assert.equal((await storage.attempts.list({ jobId: id })).length, 1, `job ${id}: one attempt`);
  });

  test('bad queueLimits are a ValidationError from the constructor', async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const jobs = [defineJob({ type: 'noop', handler: () => {} })];
    const make = (queueLimits: unknown) => new Worker({ storage, jobs, queueLimits: queueLimits as Record<string, object> });
    assert.throws(() => make({ reports: { maxRunning: 0 } }), (e: unknown) => e instanceof ValidationError && /queue reports: maxRunning/.test(e.message));
    assert.throws(() => make({ reports: { rate: { limit: 5, periodMs: -1 } } }), /queue reports: rate.periodMs/);
    assert.throws(() => make({ 'bad queue!': { maxRunning: 1 } }), ValidationError);
    assert.throws(() => make({ reports: 5 }), ValidationError);
    assert.ok(make({ reports: {} }), 'a queue given no limit is left out');
  });
});
