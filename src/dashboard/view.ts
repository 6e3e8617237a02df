/**
 * What a live page is made of, as data: text parts, table cells and rows, named slots. The
 * server renders this model to HTML for the first paint, and the JSON endpoints send the same
 * model so the page's script (assets/client.ts) redraws slots and table bodies with DOM calls
 * and textContent only. One model, two renderers: what a reload shows and what a poll shows
 * cannot drift apart.
 */
import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A POST button (its own small form): action, label, class, confirm text, hidden fields. */
export interface FormPart {
  a: string;
  l: string;
  c?: string;
  /** ask before sending: the question (a dialog with JS, a confirm page without) */
  k?: string;
  v?: Record<string, string>;
}

/**
 * One inline piece: text, optionally a link (h), a class (c), a tooltip (ti), an instant
 * (dt, ISO: a <time> the script shows in UTC or the browser's zone; r: as "3 min ago"), or a
 * POST button (f).
 */
export interface Part {
  t?: string;
  h?: string;
  c?: string;
  ti?: string;
  dt?: string;
  r?: 1;
  /** a link's relation: next / prev / first page, for the j and k keys */
  rel?: 'next' | 'prev' | 'first';
  f?: FormPart;
}

/** A table cell: its parts, its class, and its label when a narrow screen stacks the row. */
export interface Cell {
  p: Part[];
  c?: string;
  l?: string;
  /** columns it spans (a history's event row) */
  s?: number;
}

export interface Column {
  l: string;
  c?: string;
}

export interface Table {
  cols: readonly Column[];
  rows: Cell[][];
  /** shown as the only row when there are none */
  empty: string;
}

/** What a poll answers: slot contents, table bodies, sections shown or hidden, and marks (an element's state word: its data-state, and the text of its data-mark-text). */
export interface LiveModel {
  slots?: Record<string, Part[]>;
  tables?: Record<string, Cell[][]>;
  show?: Record<string, boolean>;
  marks?: Record<string, string>;
}

export const text = (t: string | number, c?: string, ti?: string): Part => ({ t: String(t), ...(c ? { c } : {}), ...(ti ? { ti } : {}) });
export const link = (t: string | number, h: string, c?: string): Part => ({ t: String(t), h, ...(c ? { c } : {}) });
export const cell = (p: Part | Part[], c?: string, l?: string, s?: number): Cell => ({ p: Array.isArray(p) ? p : [p], ...(c ? { c } : {}), ...(l ? { l } : {}), ...(s ? { s } : {}) });
export const badge = (status: string): Part => ({ t: status, c: `badge s-${status}` });
export const button = (f: FormPart): Part => ({ f });

/** ISO instant as the pages print it in UTC: 2026-03-14 10:00:00Z. */
export function iso(d: Date | null | undefined): string {
  return d ? d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z') : '—';
}

/** "3 min ago" / "in 2 h", relative to `nowMs` (display only; the script recomputes it). */
export function ago(d: Date | null | undefined, nowMs = Date.now()): string {
  if (!d) return '';
  const s = Math.round((d.getTime() - nowMs) / 1000);
  const a = Math.abs(s);
  const t = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 172_800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86_400)} d`;
  return a < 1 ? 'now' : s < 0 ? `${t} ago` : `in ${t}`;
}

/** An instant: absolute (UTC or the browser's zone) or, with `relative`, "3 min ago". */
export function when(d: Date | null | undefined, relative = false, nowMs = Date.now()): Part {
  if (!d) return { t: '—', c: 'muted' };
  return relative ? { t: ago(d, nowMs), dt: d.toISOString(), r: 1 } : { t: iso(d), dt: d.toISOString() };
}

function partHtml(p: Part, csrf: string): Html {
  if (p.f) {
    const f = p.f;
    return html`<form class="inline" method="post" action="${f.a}"${f.k ? html` data-confirm="${f.k}"` : ''}><input type="hidden" name="csrf" value="${csrf}">${Object.entries(f.v ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button class="${f.c ?? ''}">${f.l}</button></form>`;
  }
  const attrs = html`${p.c ? html` class="${p.c}"` : ''}${p.ti ? html` title="${p.ti}"` : ''}`;
  if (p.dt) return html`<time datetime="${p.dt}"${p.r ? html` data-rel` : ''}${attrs}>${p.t ?? ''}</time>`;
  if (p.h) return html`<a href="${p.h}"${p.rel ? html` rel="${p.rel}"` : ''}${attrs}>${p.t ?? ''}</a>`;
  if (p.c || p.ti) return html`<span${attrs}>${p.t ?? ''}</span>`;
  return html`${p.t ?? ''}`;
}

export function partsHtml(parts: readonly Part[], csrf: string): Html {
  return html`${parts.map((p) => partHtml(p, csrf))}`;
}

/** A named slot: the script replaces its content with the slot of the same name in a poll. */
export function slot(name: string, parts: readonly Part[], csrf: string, tag: 'span' | 'div' = 'span', cls = ''): Html {
  return tag === 'div'
    ? html`<div data-slot="${name}"${cls ? html` class="${cls}"` : ''}>${partsHtml(parts, csrf)}</div>`
    : html`<span data-slot="${name}"${cls ? html` class="${cls}"` : ''}>${partsHtml(parts, csrf)}</span>`;
}

export function rowsHtml(rows: readonly Cell[][], cols: number, empty: string, csrf: string): Html {
  if (rows.length === 0) return html`<tr class="empty"><td colspan="${cols}" class="muted">${empty}</td></tr>`;
  return html`${rows.map((r) => html`<tr>${r.map((c) => html`<td${c.c ? html` class="${c.c}"` : ''}${c.l ? html` data-label="${c.l}"` : ''}${c.s ? html` colspan="${c.s}"` : ''}>${partsHtml(c.p, csrf)}</td>`)}</tr>`)}`;
}

/**
 * A table the script can redraw (`data-table`), inside a box that scrolls sideways on its own
 * so the page never does; `stack` turns rows into cards on a narrow screen instead.
 */
export function tableHtml(name: string, t: Table, csrf: string, stack = false): Html {
  return html`<div class="tbl${stack ? ' stack' : ''}"><table data-table="${name}" data-empty="${t.empty}"><thead><tr>${t.cols.map((c) => html`<th${c.c ? html` class="${c.c}"` : ''}>${c.l}</th>`)}</tr></thead><tbody>${rowsHtml(t.rows, t.cols.length, t.empty, csrf)}</tbody></table></div>`;
}

/** JSON that is safe even if something sniffed it as HTML: <, > and & as \u escapes. */
export function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
