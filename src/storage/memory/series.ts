/** attempts.series in memory: ended attempts counted per time bucket, with core's histogram bins. */
import { FAILURE_OUTCOMES, binOf, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import type { MemoryDb } from './db.js';

/** Counts keyed by bucket and label, as rows. */
class Tally<K extends string, V> {
  readonly #m = new Map<string, { bucket: number; value: V; count: number }>();

  add(bucket: number, value: V): void {
    const k = JSON.stringify([bucket, value]);
    const e = this.#m.get(k);
    if (e) e.count++;
    else this.#m.set(k, { bucket, value, count: 1 });
  }

  rows(key: K): ({ bucket: number; count: number } & Record<K, V>)[] {
    return [...this.#m.values()].map((e) => ({ bucket: e.bucket, count: e.count, [key]: e.value }) as { bucket: number; count: number } & Record<K, V>);
  }
}

export function attemptSeries(db: MemoryDb, p: AttemptSeriesQuery): AttemptSeries {
  const q = checkSeriesQuery(p);
  const from = seriesStart(db.now().getTime(), q);
  const to = from + q.buckets * q.bucketMs;
  const outcomes = new Tally<'outcome', AttemptSeries['outcomes'][number]['outcome']>();
  const failures = new Tally<'type', string>();
  const run = new Tally<'bin', number>();
  const wait = new Tally<'bin', number>();
  for (const a of db.attempts.values()) {
    const at = a.finishedAt?.getTime();
    if (at === undefined || a.outcome === 'running' || at < from || at >= to) continue;
    const bucket = Math.floor((at - from) / q.bucketMs);
    outcomes.add(bucket, a.outcome);
    const job = db.jobs.get(a.jobId);
    if (job && FAILURE_OUTCOMES.includes(a.outcome)) failures.add(bucket, job.type);
    if (a.durationMs !== null) run.add(bucket, binOf(a.durationMs));
    if (a.waitMs !== null && a.waitMs !== undefined) wait.add(bucket, binOf(a.waitMs));
  }
  return { from: new Date(from), bucketMs: q.bucketMs, buckets: q.buckets, outcomes: outcomes.rows('outcome'), failures: failures.rows('type'), runTime: run.rows('bin'), wait: wait.rows('bin') };
}
