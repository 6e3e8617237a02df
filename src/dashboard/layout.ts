/**
 * The page frame: head (stylesheet and script from the dashboard itself, the CSRF token the
 * script's forms carry), header with navigation, the live indicator, the theme and time-zone
 * toggles and sign-out; and small formatting helpers. Everything goes through hono's `html`
 * tag, which escapes every interpolated string.
 */
import { html } from 'hono/html';
import { SCRIPT, STYLE } from './assets/index.js';
import type { Html } from './view.js';

export type { Html } from './view.js';

export const THEMES = ['auto', 'light', 'dark'] as const;
export const ZONES = ['utc', 'local'] as const;

/** The operator's display choices, from cookies (the script sets the same cookies). */
export interface Prefs {
  theme: (typeof THEMES)[number];
  tz: (typeof ZONES)[number];
}

export interface PageContext {
  base: string;
  csrf: string;
  /** show the sign-out button */
  loggedIn: boolean;
  prefs: Prefs;
  /** the page's own path and query, where a preference change comes back to */
  path: string;
  /** how often a live page polls (0: never) */
  pollMs: number;
  /** areas whose client calls exist */
  has: { schedules: boolean; locks: boolean; charts: boolean; batches: boolean; workflows: boolean };
}

export interface PageSpec {
  title: string;
  /** which navigation entry is lit */
  active: string;
  /** the JSON endpoint this page's live parts come from (under the base path) */
  live?: string | undefined;
  body: Html;
}

const next = <T extends string>(list: readonly T[], v: T): T => list[(list.indexOf(v) + 1) % list.length] as T;

function head(base: string, title: string, csrf: string | null): Html {
  return html`<meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin">
${csrf === null ? '' : html`<meta name="csrf-token" content="${csrf}">`}<title>${title} · leasehold</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${base}${STYLE.path}">`;
}

export function layout(ctx: PageContext, spec: PageSpec): Html {
  const { base, prefs } = ctx;
  const nav = (href: string, label: string, key: string) => html`<a href="${base}${href}"${spec.active === key ? html` class="on" aria-current="page"` : ''}>${label}</a>`;
  return html`<!doctype html>
<html lang="en" data-theme="${prefs.theme}" data-tz="${prefs.tz}"><head>${head(base, spec.title, ctx.csrf)}<script src="${base}${SCRIPT.path}" defer></script></head>
<body data-base="${base}" data-poll="${ctx.pollMs}"><header><a class="brand" href="${base}/">leasehold</a>
<nav>${nav('/', 'Overview', 'overview')}${nav('/jobs', 'Jobs', 'jobs')}${nav('/jobs?status=dead', 'Dead', 'dead')}${nav('/queues', 'Queues', 'queues')}${ctx.has.charts ? nav('/charts', 'Charts', 'charts') : ''}${ctx.has.batches ? nav('/batches', 'Batches', 'batches') : ''}${ctx.has.schedules ? nav('/schedules', 'Schedules', 'schedules') : ''}${ctx.has.locks ? nav('/locks', 'Locks', 'locks') : ''}${nav('/workers', 'Workers', 'workers')}</nav>
<div class="tools"><span id="live" class="live" data-state="off" hidden></span>
<form method="post" action="${base}/prefs" data-prefs><input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="next" value="${ctx.path}"><button name="theme" value="${next(THEMES, prefs.theme)}" title="light, dark, or as the system says">Theme: ${prefs.theme}</button> <button name="tz" value="${next(ZONES, prefs.tz)}" title="show times in UTC or in this browser's zone">Times: ${prefs.tz === 'utc' ? 'UTC' : 'local'}</button></form>
${ctx.loggedIn ? html`<form method="post" action="${base}/logout"><input type="hidden" name="csrf" value="${ctx.csrf}"><button>Sign out</button></form>` : ''}</div></header>
<main${spec.live ? html` data-live="${base}${spec.live}"` : ''}>${spec.body}</main></body></html>`;
}

/** A bare page for errors, sign-in and throttling: no navigation, no script. */
export function plainPage(base: string, prefs: Prefs, title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en" data-theme="${prefs.theme}" data-tz="${prefs.tz}"><head>${head(base, title, null)}</head>
<body><header><span class="brand">leasehold</span></header><main>${body}</main></body></html>`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? 'undefined';
  } catch {
    return String(value);
  }
}

export function truncate(s: string | null | undefined, n: number): string {
  if (!s) return '';
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
