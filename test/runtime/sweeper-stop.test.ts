/**
 * A sweeper being stopped: its sweep ends after the batch under way, and a worker whose sweep
 * outlives the stop's allowance says so before its caller closes the storage.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { SWEEP_BATCH } from '../../src/core/index.js';
import type { ExpiredLease, Storage } from '../../src/core/storage.js';
import { JobRegistry, defineJob } from '../../src/runtime/job-definition.js';
import { Sweeper } from '../../src/runtime/sweeper.js';
import { Worker } from '../../src/runtime/worker.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { LogCapture, deferred, overriding, waitFor } from './support.js';

const noop = defineJob({ type: 'swept', handler: () => {} });

test('a sweeper stopped during its second batch sweeps no third', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  let batches = 0;
  // every page is full, so only the stop ends the sweep before its tenth batch
  const page = (n: number): ExpiredLease[] =>
    Array.from({ length: n }, (_, i) => ({ id: String(batches * 1_000 + i), type: 'swept', leaseToken: 't', lockedBy: null, attempts: 1, maxAttempts: 3 }));
  const expiring = overriding(storage, 'leases', 'findExpired', () => async (p) => {
    if (++batches === 2) void sweeper.stop();
    return page(p.limit);
  });
  const landing: Storage = overriding(expiring, 'leases', 'finish', () => async (p) => p.items.map((f) => ({ id: f.id, applied: true })));
  const sweeper = new Sweeper(landing, new JobRegistry([noop]), pino({ level: 'silent' }), Math.random, { intervalMs: 1_000_000, retention: {}, workerSilenceMs: 60_000 });
  assert.equal(await sweeper.sweep(), 2 * SWEEP_BATCH);
  assert.equal(batches, 2);
  await storage.close();
});

test('a worker whose sweep outlives the stop\'s allowance logs worker.sweep_unfinished; one whose sweep ends does not', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  const gate = deferred();
  let sweeps = 0;
  const stuck = overriding(storage, 'leases', 'findExpired', (find) => async (p) => {
    sweeps++;
    await gate.promise;
    return find(p);
  });
  const log = new LogCapture();
  const worker = new Worker({ storage: stuck, jobs: [noop], sweepIntervalMs: 20, logger: log.logger, scheduler: false });
  await worker.start();
  try {
    await waitFor(() => sweeps === 1, 3_000, 'a sweep to be out');
    await worker.stop();
    assert.equal(log.count('worker.sweep_unfinished'), 1);
  } finally {
    gate.resolve();
  }
  const calm = new LogCapture();
  const other = new Worker({ storage, jobs: [noop], sweepIntervalMs: 20, logger: calm.logger, scheduler: false });
  await other.start();
  await other.stop();
  assert.equal(calm.count('worker.sweep_unfinished'), 0);
  await storage.close();
});
