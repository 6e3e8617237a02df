/**
 * The unhandled-jobs report reads at most DUE_READ_LIMIT due jobs: past it the numbers are
 * floors and every reader says so (client.unhandledJobs' capped, the overview's "At least").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DUE_READ_LIMIT } from '../../src/core/due-counts.js';
import type { NewJob } from '../../src/core/storage.js';
import { createDashboard } from '../../src/dashboard/index.js';
import { Client } from '../../src/runtime/client.js';
import { memoryStorage } from '../../src/storage/memory/index.js';

const job = (i: number): NewJob => ({ queue: 'default', type: 'nobody-runs-this', payload: { i }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 });

test('more due jobs than the read limit: at least the limit, marked capped', async () => {
  const storage = memoryStorage();
  await storage.migrate();
  try {
    for (let i = 0; i <= DUE_READ_LIMIT; i += 1000) await storage.jobs.insert({ jobs: Array.from({ length: Math.min(1000, DUE_READ_LIMIT + 1 - i) }, (_, k) => job(i + k)) });
    const client = new Client({ storage });
    assert.deepEqual(await client.unhandledJobs(), [{ type: 'nobody-runs-this', queue: 'default', due: DUE_READ_LIMIT, capped: true }]);
    const page = await (await createDashboard({ client }).request('/', { headers: { host: 'localhost' } })).text();
    assert.match(page, /At least 10000 due job\(s\) wait for a worker that handles their type \(the count reads 10,000 due jobs at most\)/);
    assert.match(page, /10000\+/);
  } finally {
    await storage.close();
  }
});
