/**
 * Charts drawn on the server as inline SVG: stacked bars and lines over time buckets. No library
 * and nothing fetched: the SVG scales to its box (viewBox, width 100%), its colours are the
 * stylesheet's variables (series classes k0…k7 and the status colours), so dark mode applies,
 * and every text in it goes through hono's escaping `html` tag. Each chart carries a <title>;
 * the page puts the numbers in a table beside it. The time axis is drawn in UTC; each tick names
 * its instant (data-at), so the script shows it in the browser's zone when the page's times are.
 */
import { html } from 'hono/html';
import type { Html } from '../layout.js';

const W = 360;
const H = 190;
const PAD = { l: 44, r: 6, t: 8, b: 22 };
const PW = W - PAD.l - PAD.r;
const PH = H - PAD.t - PAD.b;

export interface Series {
  key: string;
  label: string;
  /** a colour class (k0…k7, or a status: succeeded, failed, dead, cancelled) */
  cls: string;
}

export interface Bucket {
  at: Date;
  values: Record<string, number | null>;
}

/** An upper bound for the axis: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= max) ?? 10 * p;
}

const hhmm = (d: Date, withDay: boolean) => (withDay ? d.toISOString().slice(5, 16).replace('T', ' ') : d.toISOString().slice(11, 16));

function xLabels(buckets: readonly Bucket[]): Html {
  if (buckets.length === 0) return html``;
  const withDay = buckets[buckets.length - 1]!.at.getTime() - buckets[0]!.at.getTime() > 86_400_000 - 1;
  const idx = [0, Math.floor((buckets.length - 1) / 2), buckets.length - 1];
  const anchor = ['start', 'middle', 'end'];
  // data-at: the script relabels the ticks in the browser's zone when the page shows local times
  return html`${idx.map((i, n) => {
    const at = buckets[i]!.at;
    return html`<text class="ax" x="${(PAD.l + ((i + (n === 2 ? 1 : 0)) / buckets.length) * PW).toFixed(1)}" y="${H - 6}" text-anchor="${anchor[n]}" data-at="${at.toISOString()}"${withDay ? html` data-day` : ''}${n === 2 ? html` data-zone` : ''}>${hhmm(at, withDay)}${n === 2 ? ' UTC' : ''}</text>`;
  })}`;
}

function frame(id: string, title: string, inner: Html, yTicks: readonly { v: string; y: number }[], buckets: readonly Bucket[]): Html {
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-labelledby="${id}-t" preserveAspectRatio="xMidYMid meet"><title id="${id}-t">${title}</title>
${yTicks.map((t) => html`<line class="grid" x1="${PAD.l}" x2="${W - PAD.r}" y1="${t.y.toFixed(1)}" y2="${t.y.toFixed(1)}"></line><text class="ax" x="${PAD.l - 4}" y="${(t.y + 3).toFixed(1)}" text-anchor="end">${t.v}</text>`)}
${inner}${xLabels(buckets)}</svg>`;
}

/** Bars per bucket, the series stacked in order. */
export function stackedBars(id: string, title: string, series: readonly Series[], buckets: readonly Bucket[]): Html {
  const totals = buckets.map((b) => series.reduce((a, s) => a + (b.values[s.key] ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const y = (v: number) => PAD.t + PH - (v / top) * PH;
  const bw = PW / Math.max(1, buckets.length);
  const rects = buckets.flatMap((b, i) => {
    let acc = 0;
    return series.flatMap((s) => {
      const v = b.values[s.key] ?? 0;
      if (v <= 0) return [];
      const y0 = y(acc);
      acc += v;
      return [html`<rect class="${s.cls}" x="${(PAD.l + i * bw + bw * 0.1).toFixed(2)}" y="${y(acc).toFixed(2)}" width="${(bw * 0.8).toFixed(2)}" height="${(y0 - y(acc)).toFixed(2)}"><title>${hhmm(b.at, true)} ${s.label}: ${v}</title></rect>`];
    });
  });
  const ticks = (top >= 2 ? [0, top / 2, top] : [0, top]).map((v) => ({ v: String(Math.round(v * 100) / 100), y: y(v) }));
  return frame(id, title, html`${rects}`, ticks, buckets);
}

const LOG_TICKS: readonly [number, string][] = [[1, '1 ms'], [10, '10 ms'], [100, '100 ms'], [1000, '1 s'], [10_000, '10 s'], [60_000, '1 min'], [600_000, '10 min'], [3_600_000, '1 h'], [86_400_000, '1 d']];

/** Lines of durations (ms) on a log scale; a bucket without a value breaks the line. */
export function durationLines(id: string, title: string, series: readonly Series[], buckets: readonly Bucket[]): Html {
  const all = buckets.flatMap((b) => series.map((s) => b.values[s.key])).filter((v): v is number => typeof v === 'number');
  // whole decades from the smallest value's to the largest's, at least one
  const lo = all.length ? Math.floor(Math.log10(Math.max(1, Math.min(...all)))) : 0;
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(1, ...all))));
  const y = (ms: number) => PAD.t + PH - ((Math.log10(Math.max(1, ms)) - lo) / Math.max(0.001, hi - lo)) * PH;
  const bw = PW / Math.max(1, buckets.length);
  const x = (i: number) => PAD.l + (i + 0.5) * bw;
  const lines = series.map((s, n) => {
    const segs: string[] = [];
    let cur: string[] = [];
    buckets.forEach((b, i) => {
      const v = b.values[s.key];
      if (typeof v === 'number') cur.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
      else if (cur.length) {
        segs.push(cur.join(' '));
        cur = [];
      }
    });
    if (cur.length) segs.push(cur.join(' '));
    return html`${segs.map((pts) => (pts.includes(' ') ? html`<polyline class="ln ${s.cls} d${n}" points="${pts}"></polyline>` : html`<circle class="pt ${s.cls}" r="1.8" cx="${pts.split(',')[0]}" cy="${pts.split(',')[1]}"></circle>`))}`;
  });
  const ticks = LOG_TICKS.filter(([ms]) => Math.log10(ms) >= lo && Math.log10(ms) <= hi).map(([ms, v]) => ({ v, y: y(ms) }));
  return frame(id, title, html`${lines}`, ticks, buckets);
}

/** The colour key under a chart. */
export function legend(series: readonly Series[]): Html {
  return html`<ul class="legend">${series.map((s) => html`<li><span class="sw ${s.cls}"></span>${s.label}</li>`)}</ul>`;
}
