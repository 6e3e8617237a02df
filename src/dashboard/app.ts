/**
 * `createDashboard`: the dashboard as a Hono app. It reads and acts only through the client's
 * admin API (never SQL). Security by default:
 * - without a token it answers only requests addressed to a loopback host (which also stops
 *   DNS rebinding), and refuses to be created for a non-loopback `host`;
 * - with a token every request needs `Authorization: Bearer …` or the signed login cookie;
 * - every POST needs a CSRF token bound to the session and a same-origin Origin header;
 * - GET never changes anything; every shown value is HTML-escaped; strict security headers.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import { bearerAuth } from 'hono/bearer-auth';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import { isLeaseholdError, ValidationError } from '../core/errors.js';
import type { ScheduleRow } from '../core/schedules.js';
import type { AlertStateRow, QueueState } from '../core/storage.js';
import type { Client } from '../runtime/client.js';
import type { ObserveEndpoints } from '../observe/server.js';
import { healthRoutes, metricsRoutes } from '../observe/server.js';
import { BadRequest, normaliseBasePath, parseFilters, parseJobId, safeNext } from './input.js';
import type { Html, PageContext } from './layout.js';
import { STYLE_HASH } from './layout.js';
import { errorPage, jobDetailPage, jobListPage, loginPage, overviewPage, schedulesPage } from './pages.js';
import { AUTH_COOKIE, hostnameOf, isLoopbackHost, Secrets, SESSION_COOKIE, SESSION_TTL_MS, checkTokenStrength, sha256 } from './security.js';

/** The part of the client the dashboard uses; `listSchedules` is shown when the client has it. */
export type DashboardClient = Pick<Client, 'listJobs' | 'getJob' | 'listAttempts' | 'countJobs' | 'listWorkers' | 'listEffects' | 'unhandledJobs' | 'retryNow' | 'cancel'> & {
  listSchedules?: () => Promise<readonly ScheduleRow[]>;
  /** alert rules' states, shown on the overview when the client has it */
  listAlerts?: () => Promise<readonly AlertStateRow[]>;
  /** queue pause and resume, offered on the overview when the client has them */
  queueStates?: () => Promise<readonly QueueState[]>;
  pauseQueue?: (queue: string) => Promise<QueueState>;
  resumeQueue?: (queue: string) => Promise<QueueState>;
};

export interface DashboardOptions {
  client: DashboardClient;
  /** required unless the dashboard is only reachable on loopback; at least 16 characters */
  token?: string | undefined;
  /** where the dashboard is mounted, e.g. '/admin/jobs' (default: the root) */
  basePath?: string | undefined;
  /** the interface it will listen on, if known: a non-loopback host without a token is refused */
  host?: string | undefined;
  /** extra origins allowed to POST (e.g. 'https://ops.example.com' behind a proxy that rewrites Host) */
  allowedOrigins?: readonly string[] | undefined;
  /** serve `/metrics` (behind the token, as every page) and `/healthz`, `/readyz` (open: they tell nothing secret) */
  observe?: ObserveEndpoints | undefined;
}

type Env = { Variables: { sid: string; csrf: string; loggedIn: boolean } };

class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 500,
    message: string,
  ) {
    super(message);
  }
}

const headers = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], styleSrc: [`'${STYLE_HASH}'`], imgSrc: ["'self'", 'data:'], formAction: ["'self'"], frameAncestors: ["'none'"], baseUri: ["'none'"] },
  xFrameOptions: 'DENY',
  referrerPolicy: 'same-origin',
  crossOriginOpenerPolicy: 'same-origin',
  crossOriginResourcePolicy: 'same-origin',
  // the dashboard is plain HTTP on loopback unless a proxy terminates TLS, which sets HSTS itself
  strictTransportSecurity: false,
});

export function createDashboard(opts: DashboardOptions): Hono<Env> {
  const base = normaliseBasePath(opts.basePath);
  if (opts.token !== undefined) checkTokenStrength(opts.token);
  if (opts.token === undefined && opts.host !== undefined && !isLoopbackHost(opts.host)) {
    throw new TypeError(`the dashboard needs a token to listen on ${opts.host} (not loopback): pass token (or set LEASEHOLD_DASHBOARD_TOKEN)`);
  }
  const { client } = opts;
  const secrets = new Secrets(opts.token);
  const allowed = new Set((opts.allowedOrigins ?? []).map((o) => new URL(o).origin));
  const cookiePath = base || '/';
  const app = new Hono<Env>({ strict: false });
  // Middleware covers only the dashboard's paths, so mounting it with `parent.route('/', dash)`
  // leaves the parent's other routes alone.
  const scope = base ? `${base}/*` : '*';

  const page = (c: Context<Env>): PageContext => ({ base, csrf: c.get('csrf'), loggedIn: c.get('loggedIn'), showSchedules: typeof client.listSchedules === 'function' });
  const render = (c: Context<Env>, body: Html, status: 200 | 400 | 401 | 403 | 404 | 409 | 500 = 200) => c.html(body, status);
  const secure = (c: Context<Env>) => new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
  const startSession = (c: Context<Env>) => {
    const sid = secrets.newSessionId();
    setCookie(c, SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'Strict', path: cookiePath, secure: secure(c) });
    c.set('sid', sid);
    c.set('csrf', secrets.csrfFor(sid));
    return sid;
  };

  app.onError((err, c) => {
    let status: 400 | 401 | 403 | 404 | 409 | 500 = 500;
    let message = 'Something went wrong; see the server log.';
    if (err instanceof HttpError) [status, message] = [err.status, err.message];
    else if (err instanceof BadRequest) [status, message] = [400, err.message];
    else if (err instanceof ValidationError) [status, message] = [400, err.message];
    else if (isLeaseholdError(err) && err.code === 'JOB_NOT_FOUND') [status, message] = [404, err.message];
    else if (isLeaseholdError(err) && err.code === 'INVALID_STATE') [status, message] = [409, err.message];
    else if (err instanceof HTTPException && (err.status === 400 || err.status === 401)) {
      [status, message] = [err.status, err.status === 401 ? 'The bearer token is not valid.' : 'The Authorization header is malformed.'];
      const challenge = err.getResponse().headers.get('WWW-Authenticate');
      if (challenge) c.header('WWW-Authenticate', challenge);
    } else console.error('leasehold dashboard:', err);
    return render(c, errorPage(status, message, base), status);
  });
  app.notFound((c) => render(c, errorPage(404, 'No such page.', base), 404));

  // Headers on every response, errors included.
  app.use(scope, headers, async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
  });
  const bearer = opts.token === undefined ? undefined : bearerAuth<Env>({ token: opts.token, realm: 'leasehold', hashFunction: sha256 });

  app.use(scope, bodyLimit({ maxSize: 16 * 1024, onError: (c) => c.text('request body too large', 413) }));
  // probes carry no credentials: the health checks come before the token check
  if (opts.observe) app.route(base || '/', healthRoutes(opts.observe));

  // Who is asking: loopback-only without a token; bearer or login cookie with one.
  app.use(scope, async (c, next) => {
    const host = c.req.header('host') ?? new URL(c.req.url).host;
    if (!secrets.tokenRequired && !isLoopbackHost(hostnameOf(host))) {
      throw new HttpError(403, 'This dashboard has no token, so it only answers on localhost / 127.0.0.1 / ::1. Start it with a token to serve other hosts.');
    }
    const sid = getCookie(c, SESSION_COOKIE);
    if (Secrets.validSessionId(sid)) {
      c.set('sid', sid);
      c.set('csrf', secrets.csrfFor(sid));
    } else startSession(c);
    c.set('loggedIn', false);
    if (!secrets.tokenRequired) return next();

    if (c.req.header('authorization') !== undefined && bearer !== undefined) {
      // Header credentials are never sent cross-site by a browser; their CSRF token is bound to them.
      c.set('sid', 'bearer');
      c.set('csrf', secrets.csrfFor('bearer'));
      return bearer(c, next);
    }
    if (secrets.checkAuth(c.get('sid'), getCookie(c, AUTH_COOKIE), Date.now())) {
      c.set('loggedIn', true);
      return next();
    }
    const path = new URL(c.req.url).pathname;
    if (path === `${base}/login`) return next();
    if (c.req.method === 'GET' || c.req.method === 'HEAD') {
      const u = new URL(c.req.url);
      return c.redirect(`${base}/login?next=${encodeURIComponent(u.pathname + u.search)}`, 303);
    }
    throw new HttpError(401, 'Sign in first.');
  });

  // CSRF: every state-changing request must come from our own pages.
  app.use(scope, async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    if (c.req.method !== 'POST') throw new HttpError(400, `method ${c.req.method} is not used here`);
    const origin = c.req.header('origin');
    const self = new URL(c.req.url);
    if (origin !== undefined) {
      let ok = false;
      try {
        const o = new URL(origin);
        ok = o.host === (c.req.header('host') ?? self.host) || allowed.has(o.origin);
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
  });

  const r = (p: string) => `${base}${p}`;
  if (opts.observe) app.route(base || '/', metricsRoutes(opts.observe));

  const home = async (c: Context<Env>) => {
    const [counts, workers, unhandled, alerts, queues] = await Promise.all([client.countJobs(), client.listWorkers(), client.unhandledJobs(), client.listAlerts?.() ?? [], client.queueStates?.()]);
    return render(c, overviewPage(page(c), counts, workers, unhandled, Date.now(), alerts, queues, c.req.query('done')));
  };
  for (const p of base ? [base, `${base}/`] : ['/']) app.get(p, home);

  app.get(r('/jobs'), async (c) => {
    const f = parseFilters(c.req.query());
    const jobs = await client.listJobs({ status: f.status, queue: f.queue, type: f.type, beforeId: f.before, limit: f.limit });
    return render(c, jobListPage(page(c), f, jobs));
  });

  app.get(r('/jobs/:id'), async (c) => {
    const id = parseJobId(c.req.param('id'));
    const job = await client.getJob(id);
    const [attempts, effects] = await Promise.all([client.listAttempts(id), client.listEffects({ jobId: id, limit: 100 })]);
    const done = c.req.query('done');
    return render(c, jobDetailPage(page(c), job, attempts, effects, done));
  });

  app.post(r('/jobs/:id/retry'), async (c) => {
    const id = parseJobId(c.req.param('id'));
    await client.retryNow(id);
    return c.redirect(`${base}/jobs/${id}?done=retried`, 303);
  });

  app.post(r('/jobs/:id/cancel'), async (c) => {
    const id = parseJobId(c.req.param('id'));
    await client.cancel(id);
    return c.redirect(`${base}/jobs/${id}?done=cancelled`, 303);
  });

  for (const verb of ['pause', 'resume'] as const) {
    app.post(r(`/queues/:queue/${verb}`), async (c) => {
      const act = verb === 'pause' ? client.pauseQueue : client.resumeQueue;
      if (typeof act !== 'function') throw new HttpError(404, 'This client cannot pause queues.');
      await act.call(client, c.req.param('queue') ?? '');
      return c.redirect(`${base}/?done=${verb === 'pause' ? 'paused' : 'resumed'}`, 303);
    });
  }

  app.get(r('/schedules'), async (c) => {
    if (typeof client.listSchedules !== 'function') throw new HttpError(404, 'This client has no schedules API.');
    return render(c, schedulesPage(page(c), await client.listSchedules()));
  });

  app.get(r('/login'), (c) => {
    if (!secrets.tokenRequired || c.get('loggedIn')) return c.redirect(`${base}/`, 303);
    return render(c, loginPage(base, c.get('csrf'), safeNext(base, c.req.query('next')), false));
  });

  app.post(r('/login'), async (c) => {
    if (!secrets.tokenRequired) return c.redirect(`${base}/`, 303);
    const form = await c.req.parseBody();
    const next = safeNext(base, form.next);
    if (typeof form.token !== 'string' || !secrets.checkToken(form.token)) {
      return render(c, loginPage(base, c.get('csrf'), next, true), 401);
    }
    // A fresh session id on login: a planted (fixated) one never becomes authenticated.
    const sid = startSession(c);
    const maxAge = Math.floor(SESSION_TTL_MS / 1000);
    setCookie(c, AUTH_COOKIE, secrets.authFor(sid, Date.now()), { httpOnly: true, sameSite: 'Strict', path: cookiePath, secure: secure(c), maxAge });
    return c.redirect(next, 303);
  });

  app.post(r('/logout'), (c) => {
    deleteCookie(c, AUTH_COOKIE, { path: cookiePath });
    startSession(c);
    return c.redirect(secrets.tokenRequired ? `${base}/login` : `${base}/`, 303);
  });

  return app;
}
