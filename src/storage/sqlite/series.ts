/**
 * attempts.series on SQLite: ended attempts counted per time bucket in SQL (by outcome, failures
 * by job type, run time and wait in core's histogram bins). Closed 15-minute slots are counted
 * once into attempt_rollups and read from there (core/chart-rollups.ts); the rest of the window
 * is counted from job_attempts over its finished_at index, and from the succeeded job rows
 * that keep their attempt (attempts.ts) over jobs_finished_at_idx. Times are epoch ms, so a
 * bucket is an integer division (the driver binds numbers as REAL: they are cast first).
 */
import { FAILURE_OUTCOMES, checkSeriesQuery, seriesStart } from '../../core/charts.js';
import type { AttemptSeries, AttemptSeriesQuery } from '../../core/charts.js';
import { ROLLUP_KEEP_MS, ROLLUP_MARKERS_PER_INSERT, ROLLUP_SLOT_MS, missingRuns, newestMissing, rolledUntil, slotsOf, warmWindow, withRollups } from '../../core/chart-rollups.js';
import type { RollupRow } from '../../core/chart-rollups.js';
import type { AttemptOutcome } from '../../core/status.js';
import { binCase } from '../series-sql.js';
import type { SqliteDb } from './db.js';
import { HOLDS_SUCCESS } from './sql.js';

const int = (param: string): string => `CAST(@${param} AS INTEGER)`;
const BUCKET = `(a.finished_at - ${int('from')}) / ${int('bucketMs')}`;
const WINDOW = 'a.finished_at >= @start AND a.finished_at < @end';
const FAILED = FAILURE_OUTCOMES.map((o) => `'${o}'`).join(', ');
/** the slot an attempt of a roll over [@start, @end) falls in */
const SLOT = `${int('start')} + ((a.finished_at - ${int('start')}) / ${ROLLUP_SLOT_MS}) * ${ROLLUP_SLOT_MS}`;

/** The attempts that ended in the window: history rows, and the succeeded job rows that keep theirs. */
const ENDED = `(SELECT finished_at, outcome, duration_ms, wait_ms FROM {p}job_attempts a WHERE ${WINDOW}
      UNION ALL
      SELECT finished_at, 'succeeded', max(0, finished_at - started_at), max(0, started_at - run_at) FROM {p}jobs a WHERE ${WINDOW} AND ${HOLDS_SUCCESS}) a`;

/** What each series part counts, over a window of attempts, grouped by `by` (a bucket or a slot); a failure is never a job row's. */
const parts = (by: string) => ({
  outcome: { label: 'a.outcome', from: ENDED, where: '' },
  failure: { label: 'j.type', from: '{p}job_attempts a JOIN {p}jobs j ON j.id = a.job_id', where: ` AND a.outcome IN (${FAILED})` },
  run: { label: binCase('a.duration_ms'), from: ENDED, where: ' AND a.duration_ms IS NOT NULL' },
  wait: { label: binCase('a.wait_ms'), from: ENDED, where: ' AND a.wait_ms IS NOT NULL' },
  by,
});

const raw = parts(BUCKET);
const roll = parts(SLOT);
type Kind = 'outcome' | 'failure' | 'run' | 'wait';
const KINDS: readonly Kind[] = ['outcome', 'failure', 'run', 'wait'];

const SERIES_SQL = {
  /** the attempts that ended in [@start, @end), per bucket of the window starting at @from */
  raw: (k: Kind): string => `-- leasehold attempts.series: attempts that ended in the open part of the window, per bucket and ${k}
    SELECT ${raw.by} AS bucket, ${raw[k].label} AS label, count(*) AS n
    FROM ${raw[k].from} WHERE ${WINDOW}${raw[k].where} GROUP BY 1, 2`,
  // one statement per part; a slot counted meanwhile by another process keeps its rows
  roll: (k: Kind): string => `-- leasehold attempts.roll: count the attempts of closed slots [@start, @end) per slot and ${k}, once
    INSERT INTO {p}attempt_rollups (slot_at, kind, label, n)
    SELECT ${roll.by}, '${k}', CAST(${roll[k].label} AS TEXT), count(*)
    FROM ${roll[k].from} WHERE ${WINDOW}${roll[k].where} GROUP BY 1, 3
    ON CONFLICT DO NOTHING`,
  marks: (n: number): string => `-- leasehold attempts.rollMarks: mark ${n} slot(s) as counted
    INSERT INTO {p}attempt_rollups (slot_at, kind, label, n) VALUES ${Array<string>(n).fill(`(?, 'slot', '', 0)`).join(', ')}
    ON CONFLICT DO NOTHING`,
  counted: `-- leasehold attempts.rolledSlots: the slots of [@start, @end) counted already
    SELECT slot_at FROM {p}attempt_rollups WHERE slot_at >= @start AND slot_at < @end AND kind = 'slot'`,
  rolled: `-- leasehold attempts.rolled: the counted slots of [@start, @end), per bucket of the window starting at @from
    SELECT (slot_at - ${int('from')}) / ${int('bucketMs')} AS bucket, kind, label, sum(n) AS n
    FROM {p}attempt_rollups WHERE slot_at >= @start AND slot_at < @end AND kind <> 'slot' GROUP BY 1, 2, 3`,
  forget: `-- leasehold attempts.forgetRollups: counted slots older than the longest window
    DELETE FROM {p}attempt_rollups WHERE slot_at < @before`,
} as const;

const countedSlots = (db: SqliteDb, from: number, until: number): Set<number> =>
  new Set(db.read(() => (db.stmt(SERIES_SQL.counted).all({ start: from, end: until }) as { slot_at: number }[]).map((r) => r.slot_at)));

/** Count the newest `limit` closed slots of the week not counted yet (the sweeper's warm-up); how many it counted. */
export function rollUpSlots(db: SqliteDb, limit: number): number {
  const now = db.now();
  const { from, until } = warmWindow(now);
  const runs = newestMissing(from, until, countedSlots(db, from, until), limit);
  countSlots(db, runs, now);
  return slotsOf(runs).length;
}

/** Count the slots of [from, until) not counted yet, in one write transaction. */
function rollMissing(db: SqliteDb, from: number, until: number, now: number): void {
  countSlots(db, missingRuns(from, until, countedSlots(db, from, until)), now);
}

function countSlots(db: SqliteDb, runs: readonly [number, number][], now: number): void {
  if (runs.length === 0) return;
  db.write(() => {
    for (const [start, end] of runs) for (const k of KINDS) db.stmt(SERIES_SQL.roll(k)).run({ start, end });
    const slots = slotsOf(runs);
    for (let i = 0; i < slots.length; i += ROLLUP_MARKERS_PER_INSERT) {
      const chunk = slots.slice(i, i + ROLLUP_MARKERS_PER_INSERT);
      db.stmt(SERIES_SQL.marks(chunk.length)).run(...chunk);
    }
    db.stmt(SERIES_SQL.forget).run({ before: now - ROLLUP_KEEP_MS });
  });
}

export function attemptSeries(db: SqliteDb, p: AttemptSeriesQuery): AttemptSeries {
  const q = checkSeriesQuery(p);
  const now = db.now();
  const from = seriesStart(now, q);
  const until = rolledUntil(now, from, q);
  if (until > from) rollMissing(db, from, until, now);
  const at = { from, bucketMs: q.bucketMs };
  return db.read(() => {
    const open = (k: Kind) => db.stmt(SERIES_SQL.raw(k)).all({ ...at, start: until, end: from + q.buckets * q.bucketMs }) as { bucket: number; label: string | number; n: number }[];
    const series: AttemptSeries = {
      from: new Date(from),
      bucketMs: q.bucketMs,
      buckets: q.buckets,
      outcomes: open('outcome').map((r) => ({ bucket: r.bucket, outcome: r.label as AttemptOutcome, count: r.n })),
      failures: open('failure').map((r) => ({ bucket: r.bucket, type: String(r.label), count: r.n })),
      runTime: open('run').map((r) => ({ bucket: r.bucket, bin: Number(r.label), count: r.n })),
      wait: open('wait').map((r) => ({ bucket: r.bucket, bin: Number(r.label), count: r.n })),
    };
    if (until === from) return series;
    const rows = db.stmt(SERIES_SQL.rolled).all({ ...at, start: from, end: until }) as RollupRow[];
    return withRollups(series, rows.map((r) => ({ bucket: r.bucket, kind: r.kind, label: r.label, n: r.n })));
  });
}
