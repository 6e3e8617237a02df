/**
 * attempts.series on SQLite: ended attempts counted per time bucket in SQL (by outcome, failures
 * by job type, run time and wait in core's histogram bins), read over the index on
 * job_attempts.finished_at. Times are epoch ms, so a bucket is an integer division.
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import type { SqliteDb } from './db.js';

// the driver binds numbers as REAL: cast, so the division is an integer one
const BUCKET = '(a.finished_at - CAST(@from AS INTEGER)) / CAST(@bucketMs AS INTEGER)';
const WINDOW = 'a.finished_at >= @from AND a.finished_at < @to';
const FAILED = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');

const SERIES_SQL = {
  outcomes: `-- leasehold attempts.series: attempts that ended in the window, per bucket and outcome
    SELECT ${BUCKET} AS bucket, a.outcome AS outcome, count(*) AS count
    FROM {p}job_attempts a WHERE ${WINDOW} GROUP BY 1, 2`,
  failures: `-- leasehold attempts.series: failed attempts in the window, per bucket and job type (pruned jobs left out)
    SELECT ${BUCKET} AS bucket, j.type AS type, count(*) AS count
    FROM {p}job_attempts a JOIN {p}jobs j ON j.id = a.job_id
    WHERE ${WINDOW} AND a.outcome IN (${FAILED}) GROUP BY 1, 2`,
  runTime: `-- leasehold attempts.series: attempts that ended in the window, per bucket and run-time bin
    SELECT ${BUCKET} AS bucket, ${binCase('a.duration_ms')} AS bin, count(*) AS count
    FROM {p}job_attempts a WHERE ${WINDOW} AND a.duration_ms IS NOT NULL GROUP BY 1, 2`,
  wait: `-- leasehold attempts.series: attempts that ended in the window, per bucket and wait bin
    SELECT ${BUCKET} AS bucket, ${binCase('a.wait_ms')} AS bin, count(*) AS count
    FROM {p}job_attempts a WHERE ${WINDOW} AND a.wait_ms IS NOT NULL GROUP BY 1, 2`,
} as const;

type Counted = { bucket: number; count: number };

export function attemptSeries(db: SqliteDb, p: AttemptSeriesQuery): AttemptSeries {
  const q = checkSeriesQuery(p);
  const from = seriesStart(db.now(), q);
  const args = { from, to: from + q.buckets * q.bucketMs, bucketMs: q.bucketMs };
  return db.read(() => {
    const all = <T>(sql: string) => db.stmt(sql).all(args) as (T & Counted)[];
    // plain objects: node:sqlite hands out rows without a prototype
    return {
      from: new Date(from),
      bucketMs: q.bucketMs,
      buckets: q.buckets,
      outcomes: all<{ outcome: AttemptOutcome }>(SERIES_SQL.outcomes).map((r) => ({ bucket: r.bucket, outcome: r.outcome, count: r.count })),
      failures: all<{ type: string }>(SERIES_SQL.failures).map((r) => ({ bucket: r.bucket, type: r.type, count: r.count })),
      runTime: all<{ bin: number }>(SERIES_SQL.runTime).map((r) => ({ bucket: r.bucket, bin: r.bin, count: r.count })),
      wait: all<{ bin: number }>(SERIES_SQL.wait).map((r) => ({ bucket: r.bucket, bin: r.bin, count: r.count })),
    };
  });
}
