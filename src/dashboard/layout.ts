/**
 * The page frame (header, navigation, the one stylesheet) and small formatting helpers.
 * Everything goes through hono's `html` tag, which escapes every interpolated string; only
 * the stylesheet below is inserted raw, and its hash is what the CSP allows.
 */
import { createHash } from 'node:crypto';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const CSS = `
:root{--bg:#f6f6f3;--card:#fff;--ink:#1f2328;--muted:#667085;--line:#e4e4de;--accent:#2f5d8a;
--queued:#2f6fb0;--running:#7a4fb5;--succeeded:#2e7d4f;--failed:#b8661b;--dead:#b42318;--cancelled:#6b7280}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header{background:#22303c;color:#e8edf2;padding:.7rem 1.5rem;display:flex;gap:1.5rem;align-items:center}
header .brand{font-weight:650;letter-spacing:.02em;color:#fff;text-decoration:none}
header nav a{color:#c9d4de;text-decoration:none;margin-right:1rem}
header nav a:hover,header nav a.on{color:#fff}
header form{margin-left:auto}
main{max-width:1200px;margin:0 auto;padding:1.25rem 1.5rem 3rem}
h1{font-size:1.35rem;margin:.2rem 0 1rem;font-weight:600}
h2{font-size:1.05rem;margin:1.6rem 0 .6rem;font-weight:600}
a{color:var(--accent)}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem 1.1rem;margin-bottom:1rem}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(118px,1fr));gap:.75rem;margin-bottom:1rem}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.7rem .9rem;text-decoration:none;color:inherit}
.tile .n{font-size:1.5rem;font-weight:600;font-variant-numeric:tabular-nums}
.tile .l{color:var(--muted);font-size:.85rem}
table{width:100%;border-collapse:collapse;background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:.45rem .7rem;border-bottom:1px solid var(--line);vertical-align:top}
th{white-space:nowrap;background:#fafaf8;font-weight:600;font-size:.82rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
tr:last-child td{border-bottom:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}
.t{white-space:nowrap}
.mono,pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:#fbfbf9;border:1px solid var(--line);border-radius:6px;padding:.7rem;overflow:auto;max-height:28rem;white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.badge{display:inline-block;padding:0 .5rem;border-radius:999px;font-size:.8rem;font-weight:600;color:#fff;background:var(--muted)}
.s-queued{background:var(--queued)}.s-running{background:var(--running)}.s-succeeded{background:var(--succeeded)}
.s-failed{background:var(--failed)}.s-dead{background:var(--dead)}.s-cancelled{background:var(--cancelled)}
.err{color:var(--dead)}
.notice{border-left:4px solid var(--accent);background:#eef3f8;padding:.6rem .9rem;border-radius:4px;margin-bottom:1rem}
.notice.warn{border-color:var(--failed);background:#fbf3ea}
.notice.bad{border-color:var(--dead);background:#fcefee}
form.filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin-bottom:1rem}
label{display:flex;flex-direction:column;font-size:.8rem;color:var(--muted);gap:.15rem}
input,select{font:inherit;padding:.3rem .5rem;border:1px solid #cfcfc8;border-radius:6px;background:#fff;min-width:9rem}
button{font:inherit;padding:.35rem .9rem;border-radius:6px;border:1px solid #b9c4cf;background:#fff;color:var(--ink);cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{border-color:#e3b3ae;color:var(--dead)}
header button{background:transparent;color:#c9d4de;border-color:#4a5a68;padding:.15rem .6rem}
.actions{display:flex;gap:.6rem;margin:.4rem 0 1rem}
.actions form{margin:0}
form.inline{display:inline;margin:0}form.inline button{padding:.1rem .5rem;font-size:.8rem}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1.2rem;margin:0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0}
.pager{display:flex;gap:1rem;margin-top:.8rem}
details summary{cursor:pointer;color:var(--accent)}
.login{max-width:22rem;margin:4rem auto}
.login input{width:100%}
`;

/** For the Content-Security-Policy: the only inline content a page carries. */
export const STYLE_HASH = `sha256-${createHash('sha256').update(CSS, 'utf8').digest('base64')}`;

export interface PageContext {
  base: string;
  csrf: string;
  /** show the sign-out button */
  loggedIn: boolean;
  showSchedules: boolean;
}

export function layout(ctx: PageContext, title: string, active: string, body: Html): Html {
  const nav = (href: string, label: string, key: string) => html`<a href="${ctx.base}${href}" class="${active === key ? 'on' : ''}">${label}</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="same-origin"><title>${title} · leasehold</title><style>${raw(CSS)}</style></head>
<body><header><a class="brand" href="${ctx.base}/">leasehold</a><nav>${nav('/', 'Overview', 'overview')}${nav('/jobs', 'Jobs', 'jobs')}${nav('/jobs?status=dead', 'Dead', 'dead')}${ctx.showSchedules ? nav('/schedules', 'Schedules', 'schedules') : ''}</nav>
${ctx.loggedIn ? html`<form method="post" action="${ctx.base}/logout"><input type="hidden" name="csrf" value="${ctx.csrf}"><button>Sign out</button></form>` : ''}</header>
<main>${body}</main></body></html>`;
}

/** A bare page for errors and the login form. */
export function plainPage(title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="same-origin"><title>${title} · leasehold</title><style>${raw(CSS)}</style></head>
<body><header><span class="brand">leasehold</span></header><main>${body}</main></body></html>`;
}

export function statusBadge(status: string): Html {
  return html`<span class="badge s-${status}">${status}</span>`;
}

export function iso(d: Date | null | undefined): string {
  return d ? d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, 'Z') : '—';
}

/** "3 min ago" / "in 2 h", relative to this server's clock (display only). */
export function ago(d: Date | null | undefined, nowMs = Date.now()): string {
  if (!d) return '';
  const s = Math.round((d.getTime() - nowMs) / 1000);
  const a = Math.abs(s);
  const t = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 172_800 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86_400)} d`;
  return a < 1 ? 'now' : s < 0 ? `${t} ago` : `in ${t}`;
}

export function time(d: Date | null | undefined): Html {
  return d ? html`<span class="t" title="${ago(d)}">${iso(d)}</span>` : html`<span class="muted">—</span>`;
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
