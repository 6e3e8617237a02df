/**
 * The Kit every route file gets (see context.ts): rendering in the frame or bare, escaped JSON,
 * the posted form, the confirmation step of destructive actions, and the sign-in pieces
 * (session cookies, the server-side session store, the throttle, the client's address).
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { DashboardClient } from './client.js';
import type { AuthKit, Ctx, Kit, Status } from './context.js';
import type { Prefs } from './layout.js';
import { THEMES, ZONES, layout, plainPage } from './layout.js';
import { confirmPage } from './pages/auth.js';
import type { Secrets } from './security.js';
import { AUTH_COOKIE, SESSION_COOKIE, SESSION_TTL_MS } from './security.js';
import type { SessionStore } from './sessions.js';
import type { SignInThrottle } from './throttle.js';
import { safeJson } from './view.js';

export const PREF_COOKIE = { theme: 'leasehold_theme', tz: 'leasehold_tz' } as const;

export interface KitDeps {
  client: DashboardClient;
  base: string;
  pollMs: number;
  secrets: Secrets;
  sessions: SessionStore;
  throttle: SignInThrottle;
}

const oneOf = <T extends string>(list: readonly T[], v: string | undefined): T => (list as readonly string[]).includes(v ?? '') ? (v as T) : (list[0] as T);

export function prefsOf(c: Ctx): Prefs {
  return { theme: oneOf(THEMES, getCookie(c, PREF_COOKIE.theme)), tz: oneOf(ZONES, getCookie(c, PREF_COOKIE.tz)) };
}

/** https directly, or behind a proxy that says so: cookies get `Secure`. */
export const isSecure = (c: Ctx) => new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

/** The peer's address on Node's server; 'unknown' elsewhere (every such request then shares one throttle bucket). */
function clientAddress(c: Ctx): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

function authKit(d: KitDeps): AuthKit {
  const cookiePath = d.base || '/';
  const startSession = (c: Ctx) => {
    const sid = d.secrets.newSessionId();
    setCookie(c, SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'Strict', path: cookiePath, secure: isSecure(c) });
    c.set('sid', sid);
    c.set('csrf', d.secrets.csrfFor(sid));
    return sid;
  };
  return {
    tokenRequired: d.secrets.tokenRequired,
    checkToken: (t) => d.secrets.checkToken(t),
    startSession,
    signIn(c, sid) {
      const now = Date.now();
      d.sessions.add(sid, now + SESSION_TTL_MS);
      setCookie(c, AUTH_COOKIE, d.secrets.authFor(sid, now), { httpOnly: true, sameSite: 'Strict', path: cookiePath, secure: isSecure(c), maxAge: Math.floor(SESSION_TTL_MS / 1000) });
    },
    signOut(c) {
      d.sessions.revoke(c.get('sid'));
      deleteCookie(c, AUTH_COOKIE, { path: cookiePath });
      startSession(c);
    },
    clientAddress,
    throttle: d.throttle,
  };
}

export function makeKit(d: KitDeps): Kit {
  const { base, client } = d;
  const has = { schedules: typeof client.listSchedules === 'function', locks: typeof client.listLocks === 'function', charts: typeof client.attemptChart === 'function', batches: typeof client.listBatches === 'function', workflows: typeof client.workflowGraph === 'function' };
  const kit: Kit = {
    client,
    base,
    path: (p) => `${base}${p}`,
    prefs: prefsOf,
    page(c) {
      const u = new URL(c.req.url);
      return { base, csrf: c.get('csrf'), loggedIn: c.get('loggedIn'), prefs: prefsOf(c), path: u.pathname + u.search, pollMs: d.pollMs, has };
    },
    render: (c, spec, status: Status = 200) => c.html(layout(kit.page(c), spec), status),
    plain: (c, title, body, status: Status = 200) => c.html(plainPage(base, prefsOf(c), title, body), status),
    json: (c, body, status: Status = 200) => c.body(safeJson(body), status, { 'Content-Type': 'application/json; charset=utf-8' }),
    async form(c) {
      const raw = await c.req.parseBody();
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') out[k] = v;
      return out;
    },
    async confirm(c, ask) {
      const form = await kit.form(c);
      if (form.confirmed === '1') return null;
      const fields = Object.fromEntries(Object.entries(form).filter(([k]) => k !== 'csrf' && k !== 'confirmed'));
      return kit.render(c, confirmPage(kit.page(c), ask, new URL(c.req.url).pathname, fields));
    },
    back: (c, to) => c.redirect(to, 303),
    auth: authKit(d),
  };
  return kit;
}
