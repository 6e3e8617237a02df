/**
 * attempts.series on PostgreSQL: ended attempts counted per time bucket in SQL (by outcome,
 * failures by job type, run time and wait in core's histogram bins). Closed 15-minute slots are
 * counted once into attempt_rollups and read from there (core/chart-rollups.ts); the rest of
 * the window is counted from job_attempts over its finished_at index. A bucket is whole
 * milliseconds since the window's start (exact: the columns hold milliseconds) divided by the
 * bucket's length.
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { ROLLUP_KEEP_MS, ROLLUP_SLOT_MS, missingRuns, newestMissing, rolledUntil, slotsOf, warmWindow, withRollups } from '../../core/chart-rollups.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import type { Db } from './db.js';
import { NOW } from './sql.js';

type Kind = 'outcome' | 'failure' | 'run' | 'wait';
const KINDS: readonly Kind[] = ['outcome', 'failure', 'run', 'wait'];
const epochMs = (col: string): string => `(extract(epoch FROM ${col}) * 1000)::bigint`;

/** Statements over the window [$1, $2) of attempts (timestamptz); $3 the bucket origin (epoch ms), $4 the bucket length. */
function seriesSql(s: string) {
  const failed = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');
  const window = 'a.finished_at >= $1::timestamptz AND a.finished_at < $2::timestamptz';
  const part = {
    outcome: { label: 'a.outcome', from: `${s}.job_attempts a`, where: '' },
    failure: { label: 'j.type', from: `${s}.job_attempts a JOIN ${s}.jobs j ON j.id = a.job_id`, where: ` AND a.outcome IN (${failed})` },
    run: { label: `${binCase('a.duration_ms')}::text`, from: `${s}.job_attempts a`, where: ' AND a.duration_ms IS NOT NULL' },
    wait: { label: `${binCase('a.wait_ms')}::text`, from: `${s}.job_attempts a`, where: ' AND a.wait_ms IS NOT NULL' },
  };
  const slot = `$1::timestamptz + ((${epochMs('a.finished_at')} - ${epochMs('$1::timestamptz')}) / ${ROLLUP_SLOT_MS}) * interval '${ROLLUP_SLOT_MS} milliseconds'`;
  return {
    now: `-- leasehold seriesNow: the database's clock in epoch ms, which places the window
SELECT ${epochMs(NOW)} AS now`,
    raw: (k: Kind): string => `-- leasehold attemptSeries: attempts that ended in the open part of the window, per bucket and ${k}
SELECT ((${epochMs('a.finished_at')} - $3::bigint) / $4::bigint)::int AS bucket, ${part[k].label} AS label, count(*)::int AS n
FROM ${part[k].from} WHERE ${window}${part[k].where} GROUP BY 1, 2`,
    // a slot counted meanwhile by another connection keeps its rows
    roll: (k: Kind): string => `-- leasehold rollAttempts: count the attempts of closed slots [$1, $2) per slot and ${k}, once
INSERT INTO ${s}.attempt_rollups (slot_at, kind, label, n)
SELECT ${slot}, '${k}', ${part[k].label}, count(*)
FROM ${part[k].from} WHERE ${window}${part[k].where} GROUP BY 1, 3
ON CONFLICT DO NOTHING`,
    /** $1 slot starts (timestamptz[]) */
    marks: `-- leasehold rollMarks: mark slots as counted
INSERT INTO ${s}.attempt_rollups (slot_at, kind, label, n) SELECT unnest($1::timestamptz[]), 'slot', '', 0
ON CONFLICT DO NOTHING`,
    counted: `-- leasehold rolledSlots: the slots of [$1, $2) counted already
SELECT ${epochMs('slot_at')}::float8 AS slot FROM ${s}.attempt_rollups WHERE slot_at >= $1::timestamptz AND slot_at < $2::timestamptz AND kind = 'slot'`,
    rolled: `-- leasehold rolledAttempts: the counted slots of [$1, $2), per bucket of the window
SELECT ((${epochMs('slot_at')} - $3::bigint) / $4::bigint)::int AS bucket, kind, label, sum(n)::int AS n
FROM ${s}.attempt_rollups WHERE slot_at >= $1::timestamptz AND slot_at < $2::timestamptz AND kind <> 'slot' GROUP BY 1, 2, 3`,
    /** $1 cutoff */
    forget: `-- leasehold forgetRollups: counted slots older than the longest window
DELETE FROM ${s}.attempt_rollups WHERE slot_at < $1::timestamptz`,
  };
}

export class PostgresSeries {
  readonly #sql: ReturnType<typeof seriesSql>;

  constructor(private readonly db: Db) {
    this.#sql = seriesSql(db.q);
  }

  async #counted(from: number, until: number): Promise<Set<number>> {
    return new Set((await this.db.run('rolledSlots', this.#sql.counted, [new Date(from), new Date(until)])).map((r) => Number(r.slot)));
  }

  /** Count the newest `limit` closed slots of the week not counted yet (the sweeper's warm-up); how many it counted. */
  async rollUp(limit: number): Promise<number> {
    const [clock] = await this.db.run('seriesNow', this.#sql.now);
    const now = Number(clock?.now);
    const { from, until } = warmWindow(now);
    const runs = newestMissing(from, until, await this.#counted(from, until), limit);
    await this.#roll(runs, now);
    return slotsOf(runs).length;
  }

  /** Count the slots of [from, until) not counted yet, in one transaction. */
  async #rollMissing(from: number, until: number, now: number): Promise<void> {
    await this.#roll(missingRuns(from, until, await this.#counted(from, until)), now);
  }

  async #roll(runs: readonly [number, number][], now: number): Promise<void> {
    const sql = this.#sql;
    if (runs.length === 0) return;
    await this.db.transaction('rollAttempts', async (c) => {
      for (const [a, b] of runs) for (const k of KINDS) await c.query(sql.roll(k), [new Date(a), new Date(b)]);
      await c.query(sql.marks, [slotsOf(runs).map((t) => new Date(t))]);
      await c.query(sql.forget, [new Date(now - ROLLUP_KEEP_MS)]);
    });
  }

  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    const q = checkSeriesQuery(p);
    const sql = this.#sql;
    const [clock] = await this.db.run('seriesNow', sql.now);
    const now = Number(clock?.now);
    const from = seriesStart(now, q);
    const until = rolledUntil(now, from, q);
    if (until > from) await this.#rollMissing(from, until, now);
    const open = [new Date(until), new Date(from + q.buckets * q.bucketMs), from, q.bucketMs];
    const [outcomes, failures, runTime, wait, rolled] = await Promise.all([
      ...KINDS.map((k) => this.db.run('attemptSeries', sql.raw(k), open)),
      until > from ? this.db.run('rolledAttempts', sql.rolled, [new Date(from), new Date(until), from, q.bucketMs]) : Promise.resolve([]),
    ]);
    const n = (v: unknown): number => Number(v);
    const series: AttemptSeries = {
      from: new Date(from),
      bucketMs: q.bucketMs,
      buckets: q.buckets,
      outcomes: outcomes!.map((r) => ({ bucket: n(r.bucket), outcome: r.label as AttemptOutcome, count: n(r.n) })),
      failures: failures!.map((r) => ({ bucket: n(r.bucket), type: String(r.label), count: n(r.n) })),
      runTime: runTime!.map((r) => ({ bucket: n(r.bucket), bin: n(r.label), count: n(r.n) })),
      wait: wait!.map((r) => ({ bucket: n(r.bucket), bin: n(r.label), count: n(r.n) })),
    };
    return withRollups(series, rolled!.map((r) => ({ bucket: n(r.bucket), kind: String(r.kind), label: String(r.label), n: n(r.n) })));
  }
}
