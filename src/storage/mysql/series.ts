/**
 * attempts.series on MySQL/MariaDB: ended attempts counted per time bucket in SQL (by outcome,
 * failures by job type, run time and wait in core's histogram bins). Closed 15-minute slots are
 * counted once into attempt_rollups and read from there (core/chart-rollups.ts); the rest of
 * the window is counted from job_attempts over its finished_at index. A bucket is the
 * microseconds since the window's start divided by the bucket's length (floor, as the ms of
 * the other databases: the start is a whole ms).
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { ROLLUP_KEEP_MS, ROLLUP_MARKERS_PER_INSERT, ROLLUP_SLOT_MS, missingRuns, newestMissing, rolledUntil, slotsOf, warmWindow, withRollups } from '../../core/chart-rollups.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import { type Db, exec, run } from './db.js';
import { NOW, type Tables, parseUtc, utcLiteral } from './sql.js';

type Kind = 'outcome' | 'failure' | 'run' | 'wait';
const KINDS: readonly Kind[] = ['outcome', 'failure', 'run', 'wait'];

/** Statements over a window of attempts: ? = its start, its end (UTC literals), then what each names. */
function seriesSql(t: Tables, prefix: string) {
  const rollups = `${prefix}attempt_rollups`;
  const failed = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');
  const window = 'a.finished_at >= ? AND a.finished_at < ?';
  const part = {
    outcome: { label: 'a.outcome', from: `${t.attempts} a`, where: '' },
    failure: { label: 'j.type', from: `${t.attempts} a JOIN ${t.jobs} j ON j.id = a.job_id`, where: ` AND a.outcome IN (${failed})` },
    run: { label: `CAST(${binCase('a.duration_ms')} AS CHAR)`, from: `${t.attempts} a`, where: ' AND a.duration_ms IS NOT NULL' },
    wait: { label: `CAST(${binCase('a.wait_ms')} AS CHAR)`, from: `${t.attempts} a`, where: ' AND a.wait_ms IS NOT NULL' },
  };
  return {
    now: `-- leasehold seriesNow: the database's clock, which places the window
      SELECT ${NOW} AS now`,
    /** + bucket origin, bucket µs */
    raw: (k: Kind): string => `-- leasehold attemptSeries: attempts that ended in the open part of the window, per bucket and ${k}
      SELECT TIMESTAMPDIFF(MICROSECOND, ?, a.finished_at) DIV ? AS bucket, ${part[k].label} AS label, COUNT(*) AS n
      FROM ${part[k].from} WHERE ${window}${part[k].where} GROUP BY 1, 2`,
    // a slot counted meanwhile by another connection keeps its rows; + the window's start again
    roll: (k: Kind): string => `-- leasehold rollAttempts: count the attempts of closed slots per slot and ${k}, once
      INSERT INTO ${rollups} (slot_at, kind, label, n)
      SELECT TIMESTAMPADD(MICROSECOND, (TIMESTAMPDIFF(MICROSECOND, ?, a.finished_at) DIV ${ROLLUP_SLOT_MS * 1000}) * ${ROLLUP_SLOT_MS * 1000}, ?), '${k}', ${part[k].label}, COUNT(*)
      FROM ${part[k].from} WHERE ${window}${part[k].where} GROUP BY 1, 3
      ON DUPLICATE KEY UPDATE n = ${rollups}.n`,
    marks: (n: number): string => `-- leasehold rollMarks: mark ${n} slot(s) as counted
      INSERT INTO ${rollups} (slot_at, kind, label, n) VALUES ${Array<string>(n).fill(`(?, 'slot', '', 0)`).join(', ')}
      ON DUPLICATE KEY UPDATE n = ${rollups}.n`,
    counted: `-- leasehold rolledSlots: the slots of a window counted already
      SELECT slot_at FROM ${rollups} WHERE slot_at >= ? AND slot_at < ? AND kind = 'slot'`,
    /** ? = bucket origin, bucket µs, start, end */
    rolled: `-- leasehold rolledAttempts: the counted slots of a window, per bucket
      SELECT TIMESTAMPDIFF(MICROSECOND, ?, slot_at) DIV ? AS bucket, kind, label, SUM(n) AS n
      FROM ${rollups} WHERE slot_at >= ? AND slot_at < ? AND kind <> 'slot' GROUP BY 1, 2, 3`,
    forget: `-- leasehold forgetRollups: counted slots older than the longest window
      DELETE FROM ${rollups} WHERE slot_at < ?`,
  };
}

const lit = (ms: number): string => utcLiteral(new Date(ms));

export class MysqlSeries {
  readonly #sql: ReturnType<typeof seriesSql>;

  constructor(private readonly db: Db) {
    this.#sql = seriesSql(db.t, db.prefix);
  }

  async #counted(from: number, until: number): Promise<Set<number>> {
    const rows = await this.db.one('rolledSlots', (c) => run(c, this.#sql.counted, [lit(from), lit(until)]));
    return new Set(rows.map((r) => parseUtc(r.slot_at).getTime()));
  }

  /** Count the newest `limit` closed slots of the week not counted yet (the sweeper's warm-up); how many it counted. */
  async rollUp(limit: number): Promise<number> {
    const [clock] = await this.db.one('seriesNow', (c) => run(c, this.#sql.now));
    const now = parseUtc(clock?.now).getTime();
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
    await this.db.tx('rollAttempts', async (c) => {
      for (const [a, b] of runs) for (const k of KINDS) await exec(c, sql.roll(k), [lit(a), lit(a), lit(a), lit(b)]);
      const slots = slotsOf(runs);
      for (let i = 0; i < slots.length; i += ROLLUP_MARKERS_PER_INSERT) {
        const chunk = slots.slice(i, i + ROLLUP_MARKERS_PER_INSERT);
        await exec(c, sql.marks(chunk.length), chunk.map(lit));
      }
      await exec(c, sql.forget, [lit(now - ROLLUP_KEEP_MS)]);
    });
  }

  async series(p: AttemptSeriesQuery): Promise<AttemptSeries> {
    const q = checkSeriesQuery(p);
    const sql = this.#sql;
    const [clock] = await this.db.one('seriesNow', (c) => run(c, sql.now));
    const now = parseUtc(clock?.now).getTime();
    const from = seriesStart(now, q);
    const until = rolledUntil(now, from, q);
    if (until > from) await this.#rollMissing(from, until, now);
    const bucketUs = q.bucketMs * 1000;
    const open = [lit(from), bucketUs, lit(until), lit(from + q.buckets * q.bucketMs)];
    const [outcomes, failures, runTime, wait, rolled] = await Promise.all([
      ...KINDS.map((k) => this.db.one('attemptSeries', (c) => run(c, sql.raw(k), open))),
      until > from ? this.db.one('rolledAttempts', (c) => run(c, sql.rolled, [lit(from), bucketUs, lit(from), lit(until)])) : Promise.resolve([]),
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
