/**
 * leasehold_jobs from a sample whose summary counted a status past its cap: the statuses within
 * the cap by queue and type, the one past it as a single series with empty queue and type
 * holding its estimate (grouping it would read every one of its jobs).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { registerDbMetrics } from '../../src/observe/db-metrics.js';
import type { DbSample, DbSampler } from '../../src/observe/db-sampler.js';
import { seriesOf, valueOf } from './support.js';

test('a status past the count cap is one estimated series; the others by queue and type', async () => {
  const sample: DbSample = {
    takenAt: Date.now(),
    counts: [
      { queue: 'mail', type: 'send', status: 'queued', count: 40, due: 12 },
      { queue: 'mail', type: 'send', status: 'dead', count: 2, due: 0 },
    ],
    totals: [
      { status: 'queued', count: 40, exact: true, estimated: false },
      { status: 'succeeded', count: 1_234_567, exact: false, estimated: true },
      { status: 'dead', count: 2, exact: true, estimated: false },
    ],
    queues: [{ queue: 'mail', due: 12, running: 0, oldestDueAgeMs: 1000 }],
    liveWorkers: 1,
  };
  const sampler = { sample: async () => sample, sampling: true } as unknown as DbSampler;
  const registry = new Registry();
  registerDbMetrics(registry, sampler);
  const text = await registry.metrics();
  assert.equal(valueOf(text, 'leasehold_jobs', { queue: 'mail', type: 'send', status: 'queued' }), 40);
  assert.equal(valueOf(text, 'leasehold_jobs', { queue: '', type: '', status: 'succeeded' }), 1_234_567);
  assert.equal(seriesOf(text, 'leasehold_jobs', { status: 'succeeded' }).length, 1, 'no breakdown of a status past the cap');
  assert.equal(seriesOf(text, 'leasehold_jobs', { status: 'queued' }).length, 1, 'an exact status is not repeated as a total');
});
