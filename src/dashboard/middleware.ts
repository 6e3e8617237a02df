/**
 * The checks every dashboard request passes, in order:
 * - host: only Host names the dashboard answers for (loopback without a token; with one, also
 *   its own host, allowedOrigins' and allowedHosts): a DNS-rebinding page gets 403;
 * - who: a session cookie for every visitor (the CSRF token is bound to it); with a token, the
 *   bearer header or a signed auth cookie whose session is still in the server's store;
 * - CSRF: every POST carries the session's CSRF token in the form and comes from our origin.
 */
import type { MiddlewareHandler } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { getCookie } from 'hono/cookie';
import type { Env, Kit } from './context.js';
import { HttpError } from './context.js';
import { AUTH_COOKIE, hostnameOf, isLoopbackHost, Secrets, SESSION_COOKIE, sha256 } from './security.js';
import type { SessionStore } from './sessions.js';

type Handler = MiddlewareHandler<Env>;

const hostOf = (c: Parameters<Handler>[0]) => c.req.header('host') ?? new URL(c.req.url).host;

export function hostCheck(tokenRequired: boolean, allowed: (hostname: string) => boolean): Handler {
  return async (c, next) => {
    const host = hostnameOf(hostOf(c));
    if (!tokenRequired && !isLoopbackHost(host)) {
      throw new HttpError(403, 'This dashboard has no token, so it only answers on localhost / 127.0.0.1 / ::1. Start it with a token to serve other hosts.');
    }
    if (tokenRequired && !allowed(host)) {
      throw new HttpError(403, `This dashboard does not answer for the host "${host}". If that is its name, add it to allowedHosts (leasehold dashboard --allowed-host ${host}).`);
    }
    return next();
  };
}

export function whoIsAsking(kit: Kit, secrets: Secrets, sessions: SessionStore, token: string | undefined): Handler {
  const bearer = token === undefined ? undefined : bearerAuth<Env>({ token, realm: 'leasehold', hashFunction: sha256 });
  const { base } = kit;
  return async (c, next) => {
    const sid = getCookie(c, SESSION_COOKIE);
    if (Secrets.validSessionId(sid)) {
      c.set('sid', sid);
      c.set('csrf', secrets.csrfFor(sid));
    } else kit.auth.startSession(c);
    c.set('loggedIn', false);
    if (!secrets.tokenRequired) return next();

    if (c.req.header('authorization') !== undefined && bearer !== undefined) {
      // Header credentials are never sent cross-site by a browser; their CSRF token is bound to them.
      c.set('sid', 'bearer');
      c.set('csrf', secrets.csrfFor('bearer'));
      return bearer(c, next);
    }
    const current = c.get('sid');
    if (secrets.checkAuth(current, getCookie(c, AUTH_COOKIE), Date.now()) && sessions.valid(current)) {
      c.set('loggedIn', true);
      return next();
    }
    const u = new URL(c.req.url);
    if (u.pathname === `${base}/login`) return next();
    if (u.pathname.startsWith(`${base}/api/`)) throw new HttpError(401, 'Sign in first.');
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return c.redirect(`${base}/login?next=${encodeURIComponent(u.pathname + u.search)}`, 303);
    throw new HttpError(401, 'Sign in first.');
  };
}

export function csrfCheck(secrets: Secrets, allowedOrigins: ReadonlySet<string>): Handler {
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    if (c.req.method !== 'POST') throw new HttpError(400, `method ${c.req.method} is not used here`);
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      let ok = false;
      try {
        const o = new URL(origin);
        ok = o.host === hostOf(c) || allowedOrigins.has(o.origin);
      } catch {
        ok = false;
      }
      if (!ok) throw new HttpError(403, 'Cross-origin request refused.');
    }
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpError(403, 'Cross-site request refused.');
    const ctype = c.req.header('content-type') ?? '';
    if (!/^application\/x-www-form-urlencoded|^multipart\/form-data/i.test(ctype)) throw new HttpError(400, 'Send the form (application/x-www-form-urlencoded).');
    const form = await c.req.parseBody();
    if (!secrets.checkCsrf(c.get('sid'), form.csrf)) throw new HttpError(403, 'The form has expired or did not come from this dashboard (CSRF token mismatch). Reload the page and try again.');
    return next();
  };
}
