/**
 * The dashboard's charts over the attempt history: the storage counts each bucket in the
 * database (attempts.series) and core turns the counts into the chart (throughput by outcome,
 * the top failing types, run-time and wait percentiles).
 */
import { CHART_RANGES, chartOf } from '../core/charts.js';
import type { AttemptChart, ChartRange } from '../core/charts.js';
import { ValidationError } from '../core/errors.js';
import type { Storage } from '../core/storage.js';

/** Which chart `attemptChart` draws. */
export interface ChartQuery {
  /** hour: 60 × 1 min; day: 96 × 15 min; week: 84 × 2 h */
  range: ChartRange;
  /** failing types named in the chart; the rest are summed as one (default 5, at most 20) */
  topTypes?: number | undefined;
}

export async function attemptChart(storage: Storage, p: ChartQuery): Promise<AttemptChart> {
  const window = Object.hasOwn(CHART_RANGES, p?.range) ? CHART_RANGES[p.range] : undefined;
  if (!window) throw new ValidationError('INVALID_OPTION', `range must be one of ${Object.keys(CHART_RANGES).join(', ')}; got ${JSON.stringify(p?.range)}`);
  const top = p.topTypes ?? 5;
  if (!Number.isInteger(top) || top < 1 || top > 20) throw new ValidationError('INVALID_OPTION', `topTypes must be a whole number from 1 to 20; got ${String(p.topTypes)}`);
  return chartOf(await storage.attempts.series(window), top);
}
