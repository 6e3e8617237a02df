/**
 * Flow control through the public API, on every storage: a definition's `concurrencyKey(payload)`
 * keys the jobs a client enqueues, and a worker never runs more than `keyConcurrency` of one key at
 * once (the claim leaves the rest due: every job has one attempt); a paused queue runs nothing
 * until resumed; unique modes answer created / existing / replaced through `enqueue`.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { Client } from '../../src/runtime/client.js';
import { defineJob } from '../../src/runtime/job-definition.js';
import { Worker } from '../../src/runtime/worker.js';
import { LogCapture, STORAGE_KINDS, describeEachKind, openTestStorage, waitFor } from './support.js';

await describeEachKind('flow control through the API', STORAGE_KINDS, (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanups) await c();
  });

  test('keyConcurrency with the key read from the payload; a paused queue waits for its resume', { timeout: 60_000 }, async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const running = new Map<string, number>();
    let worst = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job = defineJob<{ tenant: string }>({
      type: 'per-tenant',
      queue: 'tenants',
      keyConcurrency: 2,
      concurrencyKey: (p) => p.tenant,
      handler: async (p) => {
        running.set(p.tenant, (running.get(p.tenant) ?? 0) + 1);
        worst = Math.max(worst, ...running.values());
        // the first jobs hold their slots until every tenant has two running
        if ([...running.values()].reduce((a, b) => a + b, 0) >= 6) release();
        await gate;
        running.set(p.tenant, (running.get(p.tenant) ?? 1) - 1);
      },
    });
    const client = new Client({ storage, jobs: [job] });
    await client.pauseQueue('tenants');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) for (const tenant of ['a', 'b', 'c']) ids.push((await client.enqueue('per-tenant', { tenant })).id);
    assert.equal((await client.getJob(ids[0]!)).concurrencyKey, 'a', "the definition's key function keyed the job");
    const claims: number[] = [];
    const worker = new Worker({ storage, jobs: [job], concurrency: 10, pollIntervalMs: 20, sweeper: false, scheduler: false, logger: new LogCapture().logger, observers: [{ claimed: (n) => claims.push(n) }] });
    await worker.start();
    try {
      // the worker's claims, counted as they return: two while paused, both empty
      await waitFor(() => claims.length >= 2, 10_000, 'two claims while the queue is paused');
      assert.deepEqual(claims.slice(0, 2), [0, 0]);
      assert.deepEqual(new Set((await storage.jobs.list({ limit: 20 })).map((j) => j.status)), new Set(['queued']));
      await client.resumeQueue('tenants');
      await waitFor(async () => (await storage.jobs.list({ status: 'succeeded', limit: 20 })).length === 15, 30_000, 'every job to succeed');
    } finally {
      await worker.stop({ deadlineMs: 2_000 });
    }
    assert.equal(worst, 2, 'two per tenant at most, and the limit was reached');
    for (const id of ids) assert.equal((await storage.attempts.list({ jobId: id })).length, 1, `job ${id}: one attempt`);
  });

  test('unique modes through enqueue', async () => {
    const { storage, cleanup } = await openTestStorage(kind);
    cleanups.push(cleanup);
    const client = new Client({ storage });
    const a = await client.enqueue('sync', { v: 1 }, { unique: { key: 'sync:1', mode: 'active' } });
    const b = await client.enqueue('sync', { v: 2 }, { unique: { key: 'sync:1', mode: 'active' } });
    assert.deepEqual([a.outcome, b.outcome, b.id], ['created', 'existing', a.id]);
    const d1 = await client.enqueue('search-index', { v: 1 }, { unique: { key: 'doc:9', mode: 'debounce' }, delayMs: 1_000 });
    const d2 = await client.enqueue('search-index', { v: 2 }, { unique: { key: 'doc:9', mode: 'debounce' }, delayMs: 5_000 });
    assert.deepEqual([d1.outcome, d2.outcome, d2.id], ['created', 'replaced', d1.id]);
    assert.deepEqual((await client.getJob(d1.id)).payload, { v: 2 });
    const p1 = await client.enqueue('digest', {}, { unique: { key: 'digest', mode: 'period', periodMs: 3_600_000 } });
    const p2 = await client.enqueue('digest', {}, { unique: { key: 'digest', mode: 'period', periodMs: 3_600_000 } });
    assert.equal(p2.id, p1.id);
    await assert.rejects(client.enqueue('digest', {}, { unique: { key: 'digest', mode: 'period' } }), /periodMs/);
    await assert.rejects(client.enqueue('digest', {}, { unique: { key: 'k', mode: 'sometimes' as 'active' } }), /unique.mode/);
  });
});
