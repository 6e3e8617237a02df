/**
 * attempts.series on PostgreSQL: ended attempts counted per time bucket in SQL (by outcome,
 * failures by job type, run time and wait in core's histogram bins), over the index on
 * job_attempts.finished_at. A bucket is whole milliseconds since the window's start (exact: the
 * columns hold milliseconds) divided by the bucket's length.
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import type { Db } from './db.js';
import { NOW } from './sql.js';

/** $1 window start, $2 window end (timestamptz), $3 start in epoch ms, $4 bucket ms */
function seriesSql(s: string) {
  const bucket = `(((extract(epoch FROM a.finished_at) * 1000)::bigint - $3::bigint) / $4::bigint)::int`;
  const window = `a.finished_at >= $1::timestamptz AND a.finished_at < $2::timestamptz`;
  const failed = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');
  return {
    now: `-- leasehold seriesNow: the database's clock in epoch ms, which places the window
SELECT (extract(epoch FROM ${NOW}) * 1000)::bigint AS now`,
    outcomes: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and outcome
SELECT ${bucket} AS bucket, a.outcome, count(*)::int AS count
FROM ${s}.job_attempts a WHERE ${window} GROUP BY 1, 2`,
    failures: `-- leasehold attemptSeries: failed attempts in the window, per bucket and job type (pruned jobs left out)
SELECT ${bucket} AS bucket, j.type, count(*)::int AS count
FROM ${s}.job_attempts a JOIN ${s}.jobs j ON j.id = a.job_id
WHERE ${window} AND a.outcome IN (${failed}) GROUP BY 1, 2`,
    runTime: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and run-time bin
SELECT ${bucket} AS bucket, ${binCase('a.duration_ms')} AS bin, count(*)::int AS count
FROM ${s}.job_attempts a WHERE ${window} AND a.duration_ms IS NOT NULL GROUP BY 1, 2`,
    wait: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and wait bin
SELECT ${bucket} AS bucket, ${binCase('a.wait_ms')} AS bin, count(*)::int AS count
FROM ${s}.job_attempts a WHERE ${window} AND a.wait_ms IS NOT NULL GROUP BY 1, 2`,
  };
}

export class PostgresSeries {
  readonly #sql: ReturnType<typeof seriesSql>;

  constructor(private readonly db: Db) {
    this.#sql = seriesSql(db.q);
  }

  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    const q = checkSeriesQuery(p);
    const [clock] = await this.db.run('seriesNow', this.#sql.now);
    const from = seriesStart(Number(clock?.now), q);
    const args = [new Date(from), new Date(from + q.buckets * q.bucketMs), from, q.bucketMs];
    const [outcomes, failures, runTime, wait] = await Promise.all(
      (['outcomes', 'failures', 'runTime', 'wait'] as const).map((k) => this.db.run('attemptSeries', this.#sql[k], args)),
    );
    const n = (v: unknown): number => Number(v);
    return {
      from: new Date(from),
      bucketMs: q.bucketMs,
      buckets: q.buckets,
      outcomes: outcomes!.map((r) => ({ bucket: n(r.bucket), outcome: r.outcome as AttemptOutcome, count: n(r.count) })),
      failures: failures!.map((r) => ({ bucket: n(r.bucket), type: String(r.type), count: n(r.count) })),
      runTime: runTime!.map((r) => ({ bucket: n(r.bucket), bin: n(r.bin), count: n(r.count) })),
      wait: wait!.map((r) => ({ bucket: n(r.bucket), bin: n(r.bin), count: n(r.count) })),
    };
  }
}
