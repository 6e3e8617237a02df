/**
 * The bare pages: sign-in, too many sign-in attempts, errors; and the confirmation page a
 * destructive POST answers with when it was sent without `confirmed=1` (no JS, so no dialog).
 */
import { html } from 'hono/html';
import type { Confirmation } from '../context.js';
import type { Html, PageContext, PageSpec } from '../layout.js';

export function loginBody(base: string, csrf: string, next: string, failed: boolean): Html {
  return html`<div class="login card"><h1>Sign in</h1>
${failed ? html`<div class="notice bad">That token is not right.</div>` : ''}
<form method="post" action="${base}/login"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="next" value="${next}">
<label>Dashboard token<input type="password" name="token" autocomplete="current-password" autofocus required></label>
<p><button class="primary">Sign in</button></p></form>
<p class="muted">The token is the one the dashboard was started with (<code>--token</code> or <code>LEASEHOLD_DASHBOARD_TOKEN</code>).</p></div>`;
}

export function throttledBody(base: string, waitMs: number): Html {
  const s = Math.max(1, Math.ceil(waitMs / 1000));
  return html`<div class="login card"><h1>Too many sign-in attempts</h1>
<div class="notice bad">Sign-in is paused after several wrong tokens. Try again in ${s} second${s === 1 ? '' : 's'}.</div>
<p><a href="${base}/login">Back to sign-in</a></p></div>`;
}

const TITLES: Record<number, string> = { 400: 'Bad request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not found', 409: 'Conflict', 429: 'Too many requests' };

export const errorTitle = (status: number) => TITLES[status] ?? 'Error';

export function errorBody(status: number, message: string, base: string): Html {
  return html`<div class="card"><h1>${status} · ${errorTitle(status)}</h1><p>${message}</p><p>Nothing was changed. <a href="${base}/">Back to the overview</a></p></div>`;
}

/** The same POST again, with `confirmed=1`: what a click on the dialog's button sends too. */
export function confirmPage(ctx: PageContext, ask: Confirmation, action: string, fields: Record<string, string>): PageSpec {
  const body = html`<div class="card"><h1>${ask.title}</h1><p>${ask.question}</p>
<div class="actions"><form method="post" action="${action}"><input type="hidden" name="csrf" value="${ctx.csrf}">${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<input type="hidden" name="confirmed" value="1"><button class="danger">${ask.label}</button></form>
<a href="${ask.back}">Back</a></div></div>`;
  return { title: ask.title, active: '', body };
}
