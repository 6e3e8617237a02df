/**
 * Charts over the last hour, day or week, from the attempt history (counted in the database in
 * bounded buckets, see runtime/charts.ts): throughput by outcome (stacked bars), failures by
 * type (the top types, stacked), and run time and wait p50 / p95 / p99 (lines). Each chart has
 * its numbers in a table behind a disclosure.
 */
import { html } from 'hono/html';
import type { AttemptChart, ChartRange, Percentiles } from '../../core/charts.js';
import { CHART_RANGES } from '../../core/charts.js';
import { ATTEMPT_OUTCOMES } from '../../core/status.js';
import type { Html, PageContext, PageSpec } from '../layout.js';
import { duration } from '../layout.js';
import { iso } from '../view.js';
import type { Bucket, Series } from './chart-svg.js';
import { durationLines, legend, stackedBars } from './chart-svg.js';

export const RANGES = Object.keys(CHART_RANGES) as ChartRange[];
const RANGE_TEXT: Record<ChartRange, string> = { hour: 'last hour', day: 'last day', week: 'last week' };
const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
const STATUS_COLOURED = new Set(['succeeded', 'failed', 'dead', 'cancelled']);

function numbers(caption: string, series: readonly Series[], buckets: readonly Bucket[], show: (v: number | null) => string): Html {
  const rows = buckets.filter((b) => series.some((s) => (b.values[s.key] ?? 0) > 0));
  return html`<details><summary>${caption} as numbers</summary><div class="tbl"><table><thead><tr><th>From</th>${series.map((s) => html`<th class="num">${s.label}</th>`)}</tr></thead><tbody>
${rows.length === 0 ? html`<tr class="empty"><td colspan="${series.length + 1}" class="muted">Nothing in this window.</td></tr>` : rows.map((b) => html`<tr><td><time datetime="${b.at.toISOString()}">${iso(b.at)}</time></td>${series.map((s) => html`<td class="num">${show(b.values[s.key] ?? null)}</td>`)}</tr>`)}
</tbody></table></div></details>`;
}

const pct = (p: Percentiles) => (p.count ? `p50 ${duration(p.p50 === null ? null : Math.round(p.p50))}, p95 ${duration(p.p95 === null ? null : Math.round(p.p95))}, p99 ${duration(p.p99 === null ? null : Math.round(p.p99))} over ${p.count} attempts` : 'no attempts');

function percentileChart(id: string, what: string, range: ChartRange, c: AttemptChart, pick: (b: AttemptChart['buckets'][number]) => Percentiles, total: Percentiles): Html {
  const series: Series[] = (['p50', 'p95', 'p99'] as const).map((k, i) => ({ key: k, label: k, cls: `k${i}` }));
  const buckets: Bucket[] = c.buckets.map((b) => {
    const p = pick(b);
    return { at: b.at, values: { p50: p.p50, p95: p.p95, p99: p.p99 } };
  });
  const title = `${what}, ${RANGE_TEXT[range]}: ${pct(total)}`;
  const ms = (v: number | null) => (v === null ? '' : duration(Math.round(v)));
  return html`<section class="card chart-card"><h2>${what}</h2><p class="muted">${pct(total)}</p>${durationLines(id, title, series, buckets)}${legend(series)}${numbers(what, series, buckets, ms)}</section>`;
}

export function chartsPage(ctx: PageContext, range: ChartRange, c: AttemptChart): PageSpec {
  const seen = new Set(c.buckets.flatMap((b) => Object.keys(b.outcomes)));
  let k = 3;
  const outcomes: Series[] = ATTEMPT_OUTCOMES.filter((o) => seen.has(o)).map((o) => ({ key: o, label: o, cls: STATUS_COLOURED.has(o) ? `o-${o}` : `k${k++ % 8}` }));
  const thr: Bucket[] = c.buckets.map((b) => ({ at: b.at, values: { ...b.outcomes } }));
  const attempts = c.buckets.reduce((a, b) => a + Object.values(b.outcomes).reduce((x, y) => x + (y ?? 0), 0), 0);
  const types: Series[] = c.failureTypes.map((t, i) => ({ key: t, label: t, cls: `k${i % 8}` }));
  const fails: Bucket[] = c.buckets.map((b) => ({ at: b.at, values: { ...b.failures } }));
  const failures = c.buckets.reduce((a, b) => a + Object.values(b.failures).reduce((x, y) => x + y, 0), 0);
  const n = (v: number | null) => String(v ?? 0);
  const minutes = c.bucketMs / 60_000;
  const body = html`<h1>Charts</h1>
<nav class="ranges" aria-label="window">${RANGES.map((r) => html`<a href="${ctx.base}/charts?range=${r}"${r === range ? html` class="on" aria-current="page"` : ''}>${RANGE_TEXT[r]}</a>`)}</nav>
<p class="muted">Attempts that ended since <time datetime="${c.from.toISOString()}">${iso(c.from)}</time>, in buckets of ${minutes < 60 ? `${minutes} min` : `${minutes / 60} h`}.</p>
<div class="charts">
<section class="card chart-card"><h2>Throughput by outcome</h2><p class="muted">${plural(attempts, 'attempt')} ended</p>${stackedBars('thr', `Throughput by outcome, ${RANGE_TEXT[range]}: ${plural(attempts, 'attempt')}`, outcomes, thr)}${legend(outcomes)}${numbers('Throughput', outcomes, thr, n)}</section>
<section class="card chart-card"><h2>Failures by type</h2><p class="muted">${plural(failures, 'failed attempt')}${c.failureTypes.length ? html`, most: ${c.failureTypes[0]}` : ''}</p>${stackedBars('fail', `Failures by type, ${RANGE_TEXT[range]}: ${plural(failures, 'failed attempt')}`, types, fails)}${legend(types)}${numbers('Failures', types, fails, n)}</section>
${percentileChart('run', 'Run time', range, c, (b) => b.runTime, c.runTime)}
${percentileChart('wait', 'Wait before start', range, c, (b) => b.wait, c.wait)}
</div>`;
  return { title: 'Charts', active: 'charts', body };
}
