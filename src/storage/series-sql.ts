/**
 * SQL every adapter's attempts.series shares: the histogram bin of a value as a CASE over
 * core's HISTOGRAM_EDGES_MS (constants, the same text on every database), so each database
 * counts the bins core reads percentiles from. Two levels (a group of edges, then the edge
 * within it) keep it to a dozen comparisons per row.
 */
import { HISTOGRAM_EDGES_MS } from '../core/charts.js';

const GROUP = 6;

/** The bin of `expr` (a non-null integer expression): how many edges are at or below it. */
export function binCase(expr: string): string {
  const edges = HISTOGRAM_EDGES_MS;
  const groups: string[] = [];
  for (let start = 0; start < edges.length; start += GROUP) {
    const inner = edges.slice(start, start + GROUP).map((e, i) => `WHEN ${expr} < ${e} THEN ${start + i}`);
    const end = Math.min(start + GROUP, edges.length);
    // past the group's last edge: the next group (or, after the last, the open bin)
    const last = edges[end - 1]!;
    groups.push(`WHEN ${expr} < ${last} THEN (CASE ${inner.join(' ')} END)`);
  }
  return `(CASE ${groups.join(' ')} ELSE ${edges.length} END)`;
}
