/**
 * leasehold's Prometheus metrics on every storage: a worker given `metrics.observer` runs jobs
 * that succeed and jobs that fail then die, and the registry's text shows exactly those
 * attempts by type, queue and outcome, their durations and waits, the claims and the jobs in
 * flight. The database gauges show what the tables hold, and any number of scrapes within the
 * sampling interval, from any number of metrics objects on one database, read it once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { defineJob } from '../../src/runtime/job-definition.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { Metrics } from '../../src/observe/metrics.js';
import { STORAGE_KINDS, deferred, describeEachKind, waitFor, withHarness } from '../runtime/support.js';
import { countingSamples, seriesOf, valueOf } from './support.js';

const HOUR_MS = 3_600_000;


const scrape = (m: Metrics) => m.registry.metrics();

await describeEachKind('metrics', STORAGE_KINDS, (kind) => {
  test('attempts by type, queue and outcome; durations, waits and claims by the same count; jobs in flight', () =>
    withHarness(kind, async (h) => {
      const metrics = createMetrics({ storage: h.storage, sampling: false });
      const gate = deferred();
      const jobs = [
        defineJob({ type: 'ok', queue: 'alpha', handler: () => {} }),
        defineJob({ type: 'bad', queue: 'beta', maxAttempts: 2, retry: { kind: 'fixed', delayMs: 0 }, handler: () => Promise.reject(new Error('no')) }),
        defineJob({ type: 'held', queue: 'alpha', handler: () => gate.promise }),
      ];
      const worker = await h.worker(jobs, { observers: [metrics.observer], concurrency: 4 });
      metrics.track(worker);
      const client = h.clientWith(jobs);
      await client.enqueue('held', {});
      await waitFor(async () => valueOf(await scrape(metrics), 'leasehold_worker_jobs_in_flight', { worker: worker.id }) === 1, 5_000, 'one job in flight');
      for (let i = 0; i < 5; i++) await client.enqueue('ok', { i });
      for (let i = 0; i < 3; i++) await client.enqueue('bad', { i });
      gate.resolve();
      const attempts = (t: string, type: string, queue: string, outcome: string) => valueOf(t, 'leasehold_attempts_total', { type, queue, outcome });
      await waitFor(
        async () => {
          const t = await scrape(metrics);
          return attempts(t, 'ok', 'alpha', 'succeeded') === 5 && attempts(t, 'bad', 'beta', 'dead') === 3 && attempts(t, 'held', 'alpha', 'succeeded') === 1;
        },
        10_000,
        'every attempt counted',
      );
      await waitFor(() => worker.inFlight === 0, 5_000, 'the worker to be idle');
      const t = await scrape(metrics);
      // exactly these series: nothing counted twice, nothing under another label
      const total = seriesOf(t, 'leasehold_attempts_total').map((s) => `${s.labels.type}/${s.labels.queue}/${s.labels.outcome}=${s.value}`).sort();
      assert.deepEqual(total, ['bad/beta/dead=3', 'bad/beta/failed=3', 'held/alpha/succeeded=1', 'ok/alpha/succeeded=5']);
      assert.equal(valueOf(t, 'leasehold_attempt_duration_seconds_count', { type: 'ok', outcome: 'succeeded' }), 5);
      assert.equal(valueOf(t, 'leasehold_attempt_duration_seconds_count', { type: 'bad', outcome: 'failed' }), 3);
      assert.equal(valueOf(t, 'leasehold_attempt_duration_seconds_count', { type: 'bad', outcome: 'dead' }), 3);
      assert.equal(valueOf(t, 'leasehold_attempt_duration_seconds_bucket', { type: 'ok', outcome: 'succeeded', le: '+Inf' }), 5);
      assert.equal(valueOf(t, 'leasehold_job_wait_seconds_count', { queue: 'alpha' }), 6);
      assert.equal(valueOf(t, 'leasehold_job_wait_seconds_count', { queue: 'beta' }), 6);
      // every job claimed once per attempt: the claim sizes add up to the attempts
      assert.equal(valueOf(t, 'leasehold_claim_batch_size_sum'), 12);
      assert.equal(valueOf(t, 'leasehold_worker_jobs_in_flight', { worker: worker.id }), 0);
      assert.equal(seriesOf(t, 'leasehold_leases_lost_total').length, 0);
      // sampling off: no database gauge has a value
      assert.equal(seriesOf(t, 'leasehold_jobs').length, 0);
      // merged into an application's registry, as a library user exposes them
      const app = new Registry();
      new Counter({ name: 'app_requests_total', help: 'the app', registers: [app] }).inc(2);
      const merged = await Registry.merge([app, metrics.registry]).metrics();
      assert.equal(valueOf(merged, 'app_requests_total'), 2);
      assert.equal(valueOf(merged, 'leasehold_attempts_total', { type: 'bad', queue: 'beta', outcome: 'dead' }), 3);
      assert.equal(valueOf(merged, 'leasehold_attempt_duration_seconds_count', { type: 'ok', outcome: 'succeeded' }), 5);
      await metrics.close();
    }));

  test('a job that was due an hour ago waits an hour', () =>
    withHarness(kind, async (h) => {
      const metrics = createMetrics({ sampling: false });
      const jobs = [defineJob({ type: 'late', queue: 'slow', handler: () => {} })];
      const job = await h.clientWith(jobs).enqueue('late', {}, { runAt: new Date(Date.now() - HOUR_MS) });
      await h.worker(jobs, { observers: [metrics.observer] });
      await h.waitStatus(job.id, 'succeeded');
      await waitFor(async () => valueOf(await scrape(metrics), 'leasehold_job_wait_seconds_count', { queue: 'slow' }) === 1, 5_000, 'the wait observed');
      const t = await scrape(metrics);
      assert.equal(valueOf(t, 'leasehold_job_wait_seconds_bucket', { queue: 'slow', le: '900' }), 0);
      assert.equal(valueOf(t, 'leasehold_job_wait_seconds_bucket', { queue: 'slow', le: '3600' }), 0);
      assert.equal(valueOf(t, 'leasehold_job_wait_seconds_bucket', { queue: 'slow', le: '21600' }), 1);
    }));

  test('database gauges: jobs by status, the age of the oldest due job, live workers; many scrapes, one sample', () =>
    withHarness(kind, async (h) => {
      const stuck = h.clientWith([defineJob({ type: 'stuck', queue: 'gamma', handler: () => {} })]);
      for (let i = 0; i < 3; i++) await stuck.enqueue('stuck', { i }, { runAt: new Date(Date.now() - (i + 1) * HOUR_MS) });
      await stuck.enqueue('stuck', {}, { delayMs: HOUR_MS });
      await h.worker([defineJob({ type: 'other', handler: () => {} })]);
      const { storage, calls } = countingSamples(h.storage);
      const metrics = createMetrics({ storage, sampling: { intervalMs: 60_000 } });
      const texts = await Promise.all(Array.from({ length: 5 }, () => scrape(metrics)));
      for (let i = 0; i < 5; i++) texts.push(await scrape(metrics));
      assert.deepEqual(calls, { summaries: 1, health: 1, workers: 1, acquires: 1 }, 'ten scrapes within the interval: one sample');
      const t = texts.at(-1)!;
      assert.equal(valueOf(t, 'leasehold_jobs', { queue: 'gamma', type: 'stuck', status: 'queued' }), 4);
      assert.equal(valueOf(t, 'leasehold_queue_due_jobs', { queue: 'gamma' }), 3);
      const age = valueOf(t, 'leasehold_queue_oldest_due_age_seconds', { queue: 'gamma' });
      assert.ok(age !== undefined && age >= 3 * 3600 - 60 && age < 3 * 3600 + 600, `the oldest due job is three hours old, got ${age}`);
      assert.equal(valueOf(t, 'leasehold_workers_live'), 1);
      assert.equal(valueOf(t, 'leasehold_db_sampler'), 1);
      await metrics.close();
    }));

  test('several processes on one database: one samples, the others show their own metrics only', () =>
    withHarness(kind, async (h) => {
      await h.clientWith([defineJob({ type: 'stuck', handler: () => {} })]).enqueue('stuck', {});
      const opened = [h.storage, await h.another(), await h.another()].map(countingSamples);
      const all = opened.map(({ storage }) => createMetrics({ storage, sampling: { intervalMs: 60_000 } }));
      const texts: string[][] = all.map(() => []);
      for (let round = 0; round < 4; round++) for (const [i, m] of all.entries()) texts[i]!.push(await scrape(m));
      const samples = opened.reduce((n, o) => n + o.calls.health, 0);
      assert.equal(samples, 1, 'twelve scrapes from three processes: one sample');
      const sampler = texts.map((ts) => valueOf(ts.at(-1)!, 'leasehold_db_sampler'));
      assert.deepEqual([...sampler].sort(), [0, 0, 1]);
      const withJobs = texts.filter((ts) => valueOf(ts.at(-1)!, 'leasehold_jobs', { queue: 'default', type: 'stuck', status: 'queued' }) === 1);
      assert.equal(withJobs.length, 1, 'the jobs are shown by the sampling process only');
      await Promise.all(all.map((m) => m.close()));
    }));
});
