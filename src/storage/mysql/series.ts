/**
 * attempts.series on MySQL/MariaDB: ended attempts counted per time bucket in SQL (by outcome,
 * failures by job type, run time and wait in core's histogram bins), over the index on
 * job_attempts.finished_at. A bucket is the microseconds since the window's start divided by
 * the bucket's length (floor, as the ms of the other databases: the start is a whole ms).
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import { type Db, run } from './db.js';
import { NOW, type Tables, parseUtc, utcLiteral } from './sql.js';

/** ? = window start, bucket µs, window start, window end */
function seriesSql(t: Tables) {
  const bucket = 'TIMESTAMPDIFF(MICROSECOND, ?, a.finished_at) DIV ?';
  const window = 'a.finished_at >= ? AND a.finished_at < ?';
  const failed = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');
  return {
    now: `-- leasehold seriesNow: the database's clock, which places the window
      SELECT ${NOW} AS now`,
    outcomes: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and outcome
      SELECT ${bucket} AS bucket, a.outcome AS outcome, COUNT(*) AS n
      FROM ${t.attempts} a WHERE ${window} GROUP BY 1, 2`,
    failures: `-- leasehold attemptSeries: failed attempts in the window, per bucket and job type (pruned jobs left out)
      SELECT ${bucket} AS bucket, j.type AS type, COUNT(*) AS n
      FROM ${t.attempts} a JOIN ${t.jobs} j ON j.id = a.job_id
      WHERE ${window} AND a.outcome IN (${failed}) GROUP BY 1, 2`,
    runTime: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and run-time bin
      SELECT ${bucket} AS bucket, ${binCase('a.duration_ms')} AS bin, COUNT(*) AS n
      FROM ${t.attempts} a WHERE ${window} AND a.duration_ms IS NOT NULL GROUP BY 1, 2`,
    wait: `-- leasehold attemptSeries: attempts that ended in the window, per bucket and wait bin
      SELECT ${bucket} AS bucket, ${binCase('a.wait_ms')} AS bin, COUNT(*) AS n
      FROM ${t.attempts} a WHERE ${window} AND a.wait_ms IS NOT NULL GROUP BY 1, 2`,
  };
}

export class MysqlSeries {
  readonly #sql: ReturnType<typeof seriesSql>;

  constructor(private readonly db: Db) {
    this.#sql = seriesSql(db.t);
  }

  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    const q = checkSeriesQuery(p);
    const [clock] = await this.db.one('seriesNow', (c) => run(c, this.#sql.now));
    const from = seriesStart(parseUtc(clock?.now).getTime(), q);
    const start = utcLiteral(new Date(from));
    const args = [start, q.bucketMs * 1000, start, utcLiteral(new Date(from + q.buckets * q.bucketMs))];
    const [outcomes, failures, runTime, wait] = await Promise.all(
      (['outcomes', 'failures', 'runTime', 'wait'] as const).map((k) => this.db.one('attemptSeries', (c) => run(c, this.#sql[k], args))),
    );
    const n = (v: unknown): number => Number(v);
    return {
      from: new Date(from),
      bucketMs: q.bucketMs,
      buckets: q.buckets,
      outcomes: outcomes!.map((r) => ({ bucket: n(r.bucket), outcome: r.outcome as AttemptOutcome, count: n(r.n) })),
      failures: failures!.map((r) => ({ bucket: n(r.bucket), type: String(r.type), count: n(r.n) })),
      runTime: runTime!.map((r) => ({ bucket: n(r.bucket), bin: n(r.bin), count: n(r.n) })),
      wait: wait!.map((r) => ({ bucket: n(r.bucket), bin: n(r.bin), count: n(r.n) })),
    };
  }
}
