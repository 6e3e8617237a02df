/**
 * Sign-in (throttled per client address and overall), sign-out (ends the session on the
 * server), and the display preferences (theme, time zone) for browsers without the script.
 */
import { setCookie } from 'hono/cookie';
import type { Area } from '../context.js';
import { HttpError } from '../context.js';
import { safeNext } from '../input.js';
import { isSecure, PREF_COOKIE } from '../kit.js';
import { THEMES, ZONES } from '../layout.js';
import { loginBody, throttledBody } from '../pages/auth.js';

export const auth: Area = (app, kit) => {
  const { base } = kit;
  app.get(kit.path('/login'), (c) => {
    if (!kit.auth.tokenRequired || c.get('loggedIn')) return c.redirect(`${base}/`, 303);
    return kit.plain(c, 'Sign in', loginBody(base, c.get('csrf'), safeNext(base, c.req.query('next')), false));
  });

  app.post(kit.path('/login'), async (c) => {
    if (!kit.auth.tokenRequired) return c.redirect(`${base}/`, 303);
    const client = kit.auth.clientAddress(c);
    const waitMs = kit.auth.throttle.check(client);
    if (waitMs > 0) {
      c.header('Retry-After', String(Math.ceil(waitMs / 1000)));
      return kit.plain(c, 'Too many sign-in attempts', throttledBody(base, waitMs), 429);
    }
    const form = await kit.form(c);
    const next = safeNext(base, form.next);
    if (typeof form.token !== 'string' || !kit.auth.checkToken(form.token)) {
      kit.auth.throttle.failed(client);
      return kit.plain(c, 'Sign in', loginBody(base, c.get('csrf'), next, true), 401);
    }
    // A fresh session id on sign-in: a planted (fixated) one never becomes authenticated.
    kit.auth.signIn(c, kit.auth.startSession(c));
    return c.redirect(next, 303);
  });

  app.post(kit.path('/logout'), (c) => {
    kit.auth.signOut(c);
    return c.redirect(kit.auth.tokenRequired ? `${base}/login` : `${base}/`, 303);
  });

  // the script sets the same cookies without a round trip; they hold no secret, so the script may read them
  app.post(kit.path('/prefs'), async (c) => {
    const form = await kit.form(c);
    const set = (name: 'theme' | 'tz', allowed: readonly string[]) => {
      const v = form[name];
      if (v === undefined) return;
      if (!allowed.includes(v)) throw new HttpError(400, `${name} must be one of ${allowed.join(', ')}`);
      setCookie(c, PREF_COOKIE[name], v, { sameSite: 'Strict', path: base || '/', secure: isSecure(c), maxAge: 365 * 86_400 });
    };
    set('theme', THEMES);
    set('tz', ZONES);
    return kit.back(c, safeNext(base, form.next));
  });
};
