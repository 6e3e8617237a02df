/**
 * The charts over the attempt history: the storage counts ended attempts per time bucket (by
 * outcome, failures by job type, and run time and wait in fixed histogram bins); everything
 * else is decided here, once: the bins' edges, the windows offered, top failing types, and
 * percentiles read from the bins. The same rows give the same chart on every database.
 */
import { ValidationError } from './errors.js';
import type { AttemptOutcome } from './status.js';

/** attempts.series: `buckets` buckets of `bucketMs`, the last one holding now. */
/** Which time buckets `attempts.series` counts, ending with the one holding now. */
export interface AttemptSeriesQuery {
  /** each bucket's length, in ms */
  bucketMs: number;
  /** how many buckets */
  buckets: number;
}

/** A count in one time bucket. */
export interface BucketCount {
  /** 0 = the oldest bucket */
  bucket: number;
  /** attempts counted there */
  count: number;
}

/** What the storage counts: attempts that ended (finished_at) in each bucket. */
export interface AttemptSeries {
  /** start of bucket 0: a multiple of bucketMs since the epoch, (buckets - 1) buckets before the one holding now */
  from: Date;
  /** as asked */
  bucketMs: number;
  /** as asked */
  buckets: number;
  /** attempts by bucket and outcome */
  outcomes: (BucketCount & {
    /** how they ended */
    outcome: AttemptOutcome;
  })[];
  /** attempts with a FAILURE_OUTCOMES outcome, by their job's type (attempts of pruned jobs are left out) */
  failures: (BucketCount & {
    /** the job type */
    type: string;
  })[];
  /** duration_ms in the bins of HISTOGRAM_EDGES_MS (binOf) */
  runTime: (BucketCount & {
    /** the histogram bin */
    bin: number;
  })[];
  /** wait_ms (started_at minus the due time) in the same bins; attempts without one are left out */
  wait: (BucketCount & {
    /** the histogram bin */
    bin: number;
  })[];
}

/** The outcomes counted as failures in the failures-by-type chart. */
export const FAILURE_OUTCOMES: readonly AttemptOutcome[] = ['failed', 'dead', 'timed_out', 'max_runtime', 'lease_expired', 'lease_lost'];

/**
 * Upper edges of the histogram bins in ms, log-spaced (1, 1.5, 2, 3, 5, 7 per decade; 1, 2, 3, 5, 7 ms
 * below 10) up to a day. Bin 0 is [0, 1); bin i is [edge[i-1], edge[i]); the last bin is [1 day, ∞).
 */
export const HISTOGRAM_EDGES_MS: readonly number[] = (() => {
  const out = [1, 2, 3, 5, 7];
  for (let decade = 10; decade <= 1e7; decade *= 10) for (const s of [1, 1.5, 2, 3, 5, 7]) out.push(s * decade);
  out.push(86_400_000);
  return out;
})();

/** The bin a value falls in: how many edges are at or below it. */
export function binOf(ms: number): number {
  let lo = 0;
  let hi = HISTOGRAM_EDGES_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (HISTOGRAM_EDGES_MS[mid]! <= ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A bin's range [lo, hi); hi is null for the last, open bin. */
export function binRange(bin: number): { lo: number; hi: number | null } {
  return { lo: bin === 0 ? 0 : HISTOGRAM_EDGES_MS[bin - 1]!, hi: HISTOGRAM_EDGES_MS[bin] ?? null };
}

/**
 * The q-quantile (0 < q <= 1) of a histogram: the nearest-rank value, placed by linear
 * interpolation inside its bin (the open last bin answers its lower edge). Null when empty.
 */
export function percentileOf(bins: ReadonlyMap<number, number>, q: number): number | null {
  const total = [...bins.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bin of [...bins.keys()].sort((a, b) => a - b)) {
    const n = bins.get(bin)!;
    if (seen + n >= rank) {
      const { lo, hi } = binRange(bin);
      return hi === null ? lo : lo + ((hi - lo) * (rank - seen)) / n;
    }
    seen += n;
  }
  return null;
}

/** The windows the charts offer: hour (60 × 1 min), day (96 × 15 min), week (84 × 2 h). */
export const CHART_RANGES = {
  hour: { bucketMs: 60_000, buckets: 60 },
  day: { bucketMs: 15 * 60_000, buckets: 96 },
  week: { bucketMs: 2 * 3600_000, buckets: 84 },
} as const satisfies Record<string, AttemptSeriesQuery>;
export type ChartRange = keyof typeof CHART_RANGES;

export const MAX_BUCKETS = 240;
const MAX_WINDOW_MS = 31 * 86_400_000;

export function checkSeriesQuery(p: AttemptSeriesQuery): AttemptSeriesQuery {
  const { bucketMs, buckets } = p ?? ({} as AttemptSeriesQuery);
  if (!Number.isInteger(bucketMs) || bucketMs < 1000 || bucketMs > 86_400_000) throw new ValidationError('INVALID_OPTION', `bucketMs must be a whole number of ms from 1000 to 86400000; got ${String(bucketMs)}`);
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > MAX_BUCKETS) throw new ValidationError('INVALID_OPTION', `buckets must be a whole number from 1 to ${MAX_BUCKETS}; got ${String(buckets)}`);
  if (bucketMs * buckets > MAX_WINDOW_MS) throw new ValidationError('INVALID_OPTION', 'bucketMs × buckets must be at most 31 days');
  return { bucketMs, buckets };
}

/** Start of bucket 0 for a window ending in the bucket that holds `nowMs`. */
export function seriesStart(nowMs: number, q: AttemptSeriesQuery): number {
  return Math.floor(nowMs / q.bucketMs) * q.bucketMs - (q.buckets - 1) * q.bucketMs;
}

/** Percentiles of a histogram of durations, in ms (null when it counted nothing). */
export interface Percentiles {
  /** durations counted */
  count: number;
  /** the median */
  p50: number | null;
  /** the 95th percentile */
  p95: number | null;
  /** the 99th percentile */
  p99: number | null;
}

/** One bucket of an attempt chart: the attempts that ended in it. */
export interface ChartBucket {
  /** where the bucket starts */
  at: Date;
  /** attempts by outcome (outcomes with none left out) */
  outcomes: Partial<Record<AttemptOutcome, number>>;
  /** failures by type: the top types by name, the rest under OTHER_TYPES */
  failures: Record<string, number>;
  /** the attempts' run times */
  runTime: Percentiles;
  /** how long their jobs waited past their due time before they started */
  wait: Percentiles;
}

/** The attempts of a window (an hour, a day or a week) in buckets: outcomes, failing types, run-time and wait percentiles. */
export interface AttemptChart {
  /** where the first bucket starts */
  from: Date;
  /** each bucket's length, in ms */
  bucketMs: number;
  /** the types of the failures chart, most failures first (ties by name); OTHER_TYPES last when any */
  failureTypes: string[];
  /** the buckets, oldest first */
  buckets: ChartBucket[];
  /** run times over the whole window */
  runTime: Percentiles;
  /** waits over the whole window */
  wait: Percentiles;
}

export const OTHER_TYPES = '(other)';

function percentiles(bins: ReadonlyMap<number, number>): Percentiles {
  const count = [...bins.values()].reduce((a, b) => a + b, 0);
  return { count, p50: percentileOf(bins, 0.5), p95: percentileOf(bins, 0.95), p99: percentileOf(bins, 0.99) };
}

function histograms(rows: readonly (BucketCount & { bin: number })[], buckets: number) {
  const per = Array.from({ length: buckets }, () => new Map<number, number>());
  const all = new Map<number, number>();
  for (const r of rows) {
    const m = per[r.bucket];
    if (!m) continue;
    m.set(r.bin, (m.get(r.bin) ?? 0) + r.count);
    all.set(r.bin, (all.get(r.bin) ?? 0) + r.count);
  }
  return { per, all };
}

/** The chart of a series: `topTypes` failing types named, the rest summed under OTHER_TYPES. */
export function chartOf(s: AttemptSeries, topTypes = 5): AttemptChart {
  const totals = new Map<string, number>();
  for (const f of s.failures) totals.set(f.type, (totals.get(f.type) ?? 0) + f.count);
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([t]) => t);
  const named = new Set(ranked.slice(0, topTypes));
  const run = histograms(s.runTime, s.buckets);
  const wait = histograms(s.wait, s.buckets);
  const buckets: ChartBucket[] = Array.from({ length: s.buckets }, (_, i) => ({
    at: new Date(s.from.getTime() + i * s.bucketMs),
    outcomes: {},
    failures: {},
    runTime: percentiles(run.per[i]!),
    wait: percentiles(wait.per[i]!),
  }));
  for (const o of s.outcomes) {
    const b = buckets[o.bucket];
    if (b) b.outcomes[o.outcome] = (b.outcomes[o.outcome] ?? 0) + o.count;
  }
  for (const f of s.failures) {
    const b = buckets[f.bucket];
    const key = named.has(f.type) ? f.type : OTHER_TYPES;
    if (b) b.failures[key] = (b.failures[key] ?? 0) + f.count;
  }
  const failureTypes = [...named, ...(ranked.length > named.size ? [OTHER_TYPES] : [])];
  return { from: s.from, bucketMs: s.bucketMs, failureTypes, buckets, runTime: percentiles(run.all), wait: percentiles(wait.all) };
}
