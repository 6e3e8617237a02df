/**
 * The counted slots behind attempts.series on SQL databases. Ended attempts are counted in
 * 15-minute slots; a slot that closed a minute ago or more is counted once, kept in
 * attempt_rollups (by outcome, failures by type, run-time and wait bins, and a 'slot' row saying
 * it was counted), and read from there afterwards: a week's chart reads 672 slots' counts, not a
 * week of attempts. A window of buckets that are not whole slots, and the slots still open, are
 * counted from the attempts themselves. Decided here: which slots, and how the two merge.
 */
import { CHART_RANGES } from './charts.js';
import { ValidationError } from './errors.js';
import type { AttemptSeries, AttemptSeriesQuery } from './charts.js';
import type { AttemptOutcome } from './status.js';

export const ROLLUP_SLOT_MS = 15 * 60_000;
/** a slot is counted once it closed this long ago: an attempt ending at its edge has been written by then */
export const ROLLUP_GRACE_MS = 60_000;
/** counted slots older than this are deleted (the longest window is 31 days) */
export const ROLLUP_KEEP_MS = 32 * 86_400_000;
/** how many slots one marker insert names */
export const ROLLUP_MARKERS_PER_INSERT = 500;

/** slots the sweeper counts per maintenance pass: a day of history in an hour of passes, bounded work each */
export const ROLLUP_SLOTS_PER_SWEEP = 24;

export type RollupKind = 'outcome' | 'failure' | 'run' | 'wait';

/** One counted row as read back: its bucket in the window, what it counts, how many. */
export interface RollupRow {
  bucket: number;
  kind: RollupKind | string;
  label: string;
  n: number;
}

/** Where a window's counted slots end: [from, until) comes from attempt_rollups, [until, to) from the attempts. */
export function rolledUntil(nowMs: number, from: number, q: AttemptSeriesQuery): number {
  if (q.bucketMs % ROLLUP_SLOT_MS !== 0) return from;
  const closed = Math.floor((nowMs - ROLLUP_GRACE_MS) / ROLLUP_SLOT_MS) * ROLLUP_SLOT_MS;
  return Math.max(from, Math.min(from + q.buckets * q.bucketMs, closed));
}

/** The runs [start, end) of slots in [from, until) not counted yet. */
export function missingRuns(from: number, until: number, counted: ReadonlySet<number>): [number, number][] {
  const runs: [number, number][] = [];
  for (let slot = from; slot < until; slot += ROLLUP_SLOT_MS) {
    if (counted.has(slot)) continue;
    const last = runs[runs.length - 1];
    if (last && last[1] === slot) last[1] = slot + ROLLUP_SLOT_MS;
    else runs.push([slot, slot + ROLLUP_SLOT_MS]);
  }
  return runs;
}

/** The slot count of attempts.rollUp: a whole number from 1 to a week of slots. */
export function checkRollUp(p: { slots: number }): number {
  const v = p?.slots;
  const max = (7 * 86_400_000) / ROLLUP_SLOT_MS;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) throw new ValidationError('INVALID_OPTION', `slots must be a whole number from 1 to ${max}; got ${String(v)}`);
  return v;
}

/** The slots a warm-up may count: the longest chart window's, up to the last closed slot. */
export function warmWindow(nowMs: number): { from: number; until: number } {
  const until = Math.floor((nowMs - ROLLUP_GRACE_MS) / ROLLUP_SLOT_MS) * ROLLUP_SLOT_MS;
  const span = Math.max(...Object.values(CHART_RANGES).filter((r) => r.bucketMs % ROLLUP_SLOT_MS === 0).map((r) => r.buckets * r.bucketMs));
  // one slot more: a window that starts on a slot's edge mid-way through it still finds it counted
  return { from: until - span - ROLLUP_SLOT_MS, until };
}

/** The newest `limit` slots of [from, until) not counted yet, as runs: a chart asks for recent windows first. */
export function newestMissing(from: number, until: number, counted: ReadonlySet<number>, limit: number): [number, number][] {
  const runs: [number, number][] = [];
  let taken = 0;
  for (let slot = until - ROLLUP_SLOT_MS; slot >= from && taken < limit; slot -= ROLLUP_SLOT_MS) {
    if (counted.has(slot)) continue;
    taken++;
    const first = runs[0];
    if (first && first[0] === slot + ROLLUP_SLOT_MS) first[0] = slot;
    else runs.unshift([slot, slot + ROLLUP_SLOT_MS]);
  }
  return runs;
}

/** Every slot start in the runs, for their 'slot' rows. */
export function slotsOf(runs: readonly [number, number][]): number[] {
  return runs.flatMap(([a, b]) => Array.from({ length: (b - a) / ROLLUP_SLOT_MS }, (_, i) => a + i * ROLLUP_SLOT_MS));
}

/** Counts by bucket and label, in the order first seen. */
class Tally {
  readonly counts = new Map<string, { bucket: number; label: string; count: number }>();

  add(bucket: number, label: string, n: number): void {
    const k = `${bucket}\u0000${label}`;
    const hit = this.counts.get(k);
    if (hit) hit.count += n;
    else this.counts.set(k, { bucket, label, count: n });
  }

  rows<T>(make: (bucket: number, label: string, count: number) => T): T[] {
    return [...this.counts.values()].map((c) => make(c.bucket, c.label, c.count));
  }
}

/** A series with the counted slots' rows added to the attempts' own counts. */
export function withRollups(series: AttemptSeries, rows: readonly RollupRow[]): AttemptSeries {
  const t: Record<RollupKind, Tally> = { outcome: new Tally(), failure: new Tally(), run: new Tally(), wait: new Tally() };
  for (const r of series.outcomes) t.outcome.add(r.bucket, r.outcome, r.count);
  for (const r of series.failures) t.failure.add(r.bucket, r.type, r.count);
  for (const r of series.runTime) t.run.add(r.bucket, String(r.bin), r.count);
  for (const r of series.wait) t.wait.add(r.bucket, String(r.bin), r.count);
  for (const r of rows) if (Object.hasOwn(t, r.kind)) t[r.kind as RollupKind].add(r.bucket, r.label, r.n);
  return {
    ...series,
    outcomes: t.outcome.rows((bucket, label, count) => ({ bucket, outcome: label as AttemptOutcome, count })),
    failures: t.failure.rows((bucket, type, count) => ({ bucket, type, count })),
    runTime: t.run.rows((bucket, bin, count) => ({ bucket, bin: Number(bin), count })),
    wait: t.wait.rows((bucket, bin, count) => ({ bucket, bin: Number(bin), count })),
  };
}
