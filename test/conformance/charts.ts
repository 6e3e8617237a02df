/**
 * attempts.series: ended attempts counted per bucket by outcome, failures by job type, and run
 * time and wait in core's histogram bins — compared with what core computes from the same
 * attempts read back one by one (attempts.list), so every database bins alike. Run times and
 * waits come from real claims and finishes, some after short pauses so they spread over
 * several bins; the test holds whatever they are.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAILURE_OUTCOMES, binOf, chartOf } from '../../src/core/charts.js';
import { ValidationError } from '../../src/core/errors.js';
import type { AttemptRow, AttemptSeries, AttemptSeriesQuery } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';
import { claimOne, finish, newJob, sleep, uniq, useDb } from './helpers.js';

type Row = { bucket: number; count: number } & Record<string, unknown>;

/** Rows as sorted "bucket/label=count" strings, so two row sets compare whatever their order. */
const flat = (rows: readonly object[], label: string): string[] => (rows as Row[]).map((r) => `${r.bucket}/${String(r[label])}=${r.count}`).sort();

function tally(into: Map<string, Row>, bucket: number, label: string, value: unknown): void {
  const k = `${bucket}/${String(value)}`;
  const r = into.get(k) ?? { bucket, count: 0, [label]: value };
  r.count += 1;
  into.set(k, r);
}

/** What the series must hold for these attempts (with their jobs' types), computed in JavaScript. */
function expected(attempts: readonly (AttemptRow & { type: string })[], q: AttemptSeriesQuery, from: number) {
  const [outcomes, failures, run, wait] = [new Map<string, Row>(), new Map<string, Row>(), new Map<string, Row>(), new Map<string, Row>()];
  for (const a of attempts) {
    const bucket = Math.floor((a.finishedAt!.getTime() - from) / q.bucketMs);
    tally(outcomes, bucket, 'outcome', a.outcome);
    if (FAILURE_OUTCOMES.includes(a.outcome)) tally(failures, bucket, 'type', a.type);
    tally(run, bucket, 'bin', binOf(a.durationMs!));
    tally(wait, bucket, 'bin', binOf(a.waitMs));
  }
  return { outcomes: [...outcomes.values()], failures: [...failures.values()], runTime: [...run.values()], wait: [...wait.values()] };
}

export function chartTests(h: ConformanceHarness): void {
  describe('attempts.series', () => {
    const db = useDb(h);

    it('counts ended attempts per bucket by outcome, failures by type, run time and wait in core’s bins', async () => {
      const s = db.storage;
      const [ok, bad] = [uniq('chart'), uniq('chart')];
      const ended: (AttemptRow & { type: string })[] = [];
      // waits: claimed at once, or after a pause; run times: finished at once, or after one
      const plan: [string, number, number, 'succeeded' | 'failed' | 'dead'][] = [
        [ok, 0, 0, 'succeeded'], [ok, 0, 25, 'succeeded'], [ok, 30, 0, 'succeeded'], [ok, 0, 120, 'succeeded'],
        [bad, 0, 0, 'failed'], [bad, 15, 40, 'dead'], [ok, 0, 3, 'failed'],
      ];
      const before = (await s.now()).getTime();
      for (const [type, waitMs, runMs, status] of plan) {
        await s.jobs.insert({ jobs: [newJob(type)] });
        if (waitMs) await sleep(waitMs);
        const c = await claimOne(s, type);
        if (runMs) await sleep(runMs);
        await finish(s, c, { status, runAfterMs: 60_000, attempt: { outcome: status }, ...(status === 'succeeded' ? {} : { error: { code: 'E', message: 'x' } }) });
        const [a] = (await s.attempts.list({ jobId: c.id })).filter((r) => r.leaseToken === c.leaseToken);
        ended.push({ ...a!, type });
      }
      const q = { bucketMs: 60_000, buckets: 5 };
      const series = await s.attempts.series(q);
      const from = series.from.getTime();
      assert.equal(from % q.bucketMs, 0, 'buckets are aligned to their length');
      const after = (await s.now()).getTime();
      assert.ok(from + (q.buckets - 1) * q.bucketMs <= after && from + q.buckets * q.bucketMs > before, 'the last bucket holds now');
      const want = expected(ended, q, from);
      assert.deepEqual([series.bucketMs, series.buckets], [q.bucketMs, q.buckets]);
      assert.deepEqual(flat(series.outcomes, 'outcome'), flat(want.outcomes, 'outcome'));
      assert.deepEqual(flat(series.failures, 'type'), flat(want.failures, 'type'));
      assert.deepEqual(flat(series.runTime, 'bin'), flat(want.runTime, 'bin'));
      assert.deepEqual(flat(series.wait, 'bin'), flat(want.wait, 'bin'));
      // more than one bin each: the pauses spread them
      assert.ok(new Set(series.runTime.map((r) => r.bin)).size > 1 && new Set(series.wait.map((r) => r.bin)).size > 1);

      const chart = chartOf(series as AttemptSeries, 1);
      assert.deepEqual(chart.failureTypes, [bad, '(other)'], 'the top type, then the rest');
      assert.equal(chart.runTime.count, plan.length);
    });

    it('a running attempt is not counted until it ends', async () => {
      const s = db.storage;
      const t = uniq('chart');
      const q = { bucketMs: 60_000, buckets: 5 };
      const total = async () => (await s.attempts.series(q)).outcomes.reduce((n, r) => n + r.count, 0);
      const before = await total();
      await s.jobs.insert({ jobs: [newJob(t)] });
      const c = await claimOne(s, t);
      assert.equal(await total(), before);
      await finish(s, c);
      assert.equal(await total(), before + 1);
    });

    it('refuses a bad window with a ValidationError', async () => {
      const s = db.storage;
      for (const q of [{ bucketMs: 999, buckets: 5 }, { bucketMs: 60_000, buckets: 0 }, { bucketMs: 60_000, buckets: 241 }, { bucketMs: 1.5e3, buckets: 2.5 }, { bucketMs: 86_400_000, buckets: 32 }]) {
        await assert.rejects(s.attempts.series(q), ValidationError, JSON.stringify(q));
      }
    });
  });
}
