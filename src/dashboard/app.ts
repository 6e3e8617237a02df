/**
 * `createDashboard`: the dashboard as a Hono app. It reads and acts only through the client's
 * admin API (never SQL). This file holds the middleware, in order, and nothing else; each area
 * (overview, jobs, queues, …) is a file in routes/ registered in routes/index.ts. Security by
 * default:
 * - without a token it answers only requests addressed to a loopback host, and refuses to be
 *   created for a non-loopback `host`; with one it answers only its allowed hosts (DNS rebinding);
 * - with a token every request needs `Authorization: Bearer …` or the signed sign-in cookie of
 *   a session still open on the server (sign-out ends it); sign-in attempts are throttled;
 * - every POST needs a CSRF token bound to the session and a same-origin Origin header;
 * - GET never changes anything; every shown value is escaped (HTML on the server, textContent
 *   in the script); strict security headers on every response, 404s included.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { etag } from 'hono/etag';
import { HTTPException } from 'hono/http-exception';
import { isLeaseholdError, ValidationError } from '../core/errors.js';
import type { ObserveEndpoints } from '../observe/server.js';
import { healthRoutes, metricsRoutes } from '../observe/server.js';
import { ASSETS } from './assets/index.js';
import type { DashboardClient } from './client.js';
import type { Env, Status } from './context.js';
import { HttpError } from './context.js';
import { decorate, withHeaders } from './headers.js';
import { BadRequest, normaliseBasePath } from './input.js';
import { makeKit } from './kit.js';
import { csrfCheck, hostCheck, whoIsAsking } from './middleware.js';
import { errorBody, errorTitle } from './pages/auth.js';
import { AREAS } from './routes/index.js';
import { checkTokenStrength, hostAllowlist, isLoopbackHost, Secrets } from './security.js';
import { SessionStore } from './sessions.js';
import { SignInThrottle } from './throttle.js';

export type { DashboardClient } from './client.js';

/** Options for {@link createDashboard}. */
export interface DashboardOptions {
  /** what the pages read and act through, e.g. `withOperatorApi(client)` */
  client: DashboardClient;
  /** required unless the dashboard is only reachable on loopback; at least 16 characters */
  token?: string | undefined;
  /** where the dashboard is mounted, e.g. '/admin/jobs' (default: the root) */
  basePath?: string | undefined;
  /** the interface it will listen on, if known: a non-loopback host without a token is refused */
  host?: string | undefined;
  /** extra origins allowed to POST (e.g. 'https://ops.example.com' behind a proxy that rewrites Host); their hosts are allowed too */
  allowedOrigins?: readonly string[] | undefined;
  /** with a token: Host names it answers for besides loopback, `host` and allowedOrigins' hosts (e.g. 'ops.example.com') */
  allowedHosts?: readonly string[] | undefined;
  /** how often an open page asks for fresh numbers, in ms (default 3000; 0: never) */
  pollMs?: number | undefined;
  /** serve `/metrics` (behind the token, as every page) and `/healthz`, `/readyz` (open: they tell nothing secret) */
  observe?: ObserveEndpoints | undefined;
}

const DEFAULT_POLL_MS = 3_000;

function statusOf(err: unknown): [Status, string] {
  if (err instanceof HttpError) return [err.status, err.message];
  if (err instanceof BadRequest || err instanceof ValidationError) return [400, err.message];
  if (isLeaseholdError(err) && (err.code === 'JOB_NOT_FOUND' || err.code === 'SCHEDULE_NOT_FOUND')) return [404, err.message];
  if (isLeaseholdError(err) && err.code === 'INVALID_STATE') return [409, err.message];
  if (err instanceof HTTPException && (err.status === 400 || err.status === 401)) {
    return [err.status, err.status === 401 ? 'The bearer token is not valid.' : 'The Authorization header is malformed.'];
  }
  console.error('leasehold dashboard:', err);
  return [500, 'Something went wrong; see the server log.'];
}

export function createDashboard(opts: DashboardOptions): Hono<Env> {
  const base = normaliseBasePath(opts.basePath);
  if (opts.token !== undefined) checkTokenStrength(opts.token);
  if (opts.token === undefined && opts.host !== undefined && !isLoopbackHost(opts.host)) {
    throw new TypeError(`the dashboard needs a token to listen on ${opts.host} (not loopback): pass token (or set LEASEHOLD_DASHBOARD_TOKEN)`);
  }
  const pollMs = opts.pollMs ?? DEFAULT_POLL_MS;
  if (!Number.isInteger(pollMs) || (pollMs !== 0 && (pollMs < 100 || pollMs > 3_600_000))) throw new TypeError(`pollMs must be 0 (off) or a whole number of ms from 100 to 3600000, got ${String(pollMs)}`);
  const secrets = new Secrets(opts.token);
  const sessions = new SessionStore();
  const allowedHost = hostAllowlist(opts);
  const allowedOrigins = new Set((opts.allowedOrigins ?? []).map((o) => new URL(o).origin));
  const kit = makeKit({ client: opts.client, base, pollMs, secrets, sessions, throttle: new SignInThrottle() });
  const app = new Hono<Env>({ strict: false });
  // Middleware covers only the dashboard's paths, so mounting it with `parent.route('/', dash)`
  // leaves the parent's other routes alone.
  const scope = base ? `${base}/*` : '*';
  const isApi = (c: Context<Env>) => new URL(c.req.url).pathname.startsWith(`${base}/api/`);
  const answer = (c: Context<Env>, status: Status, message: string) =>
    isApi(c) ? kit.json(c, { error: message }, status) : kit.plain(c, errorTitle(status), errorBody(status, message, base), status);

  app.onError((err, c) => {
    const [status, message] = statusOf(err);
    if (err instanceof HttpError) for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
    if (err instanceof HTTPException) {
      const challenge = err.getResponse().headers.get('WWW-Authenticate');
      if (challenge) c.header('WWW-Authenticate', challenge);
    }
    return answer(c, status, message);
  });
  // outside the base path no middleware ran: the headers are put on here
  app.notFound((c) => decorate(c, () => answer(c, 404, 'No such page.')));

  app.use(scope, withHeaders);
  app.use(scope, bodyLimit({ maxSize: 16 * 1024, onError: (c) => c.text('request body too large', 413) }));
  // probes carry no credentials and may name any host: the health checks come first
  if (opts.observe) app.route(base || '/', healthRoutes(opts.observe));
  app.use(scope, hostCheck(secrets.tokenRequired, allowedHost));
  // the stylesheet and script hold nothing secret: the sign-in page needs them too
  for (const a of ASSETS) app.get(kit.path(a.path), (c) => c.body(a.body, 200, { 'Content-Type': a.type, 'Cache-Control': 'public, max-age=31536000, immutable' }));
  app.use(scope, whoIsAsking(kit, secrets, sessions, opts.token));
  app.use(scope, csrfCheck(secrets, allowedOrigins));
  // a poll whose answer did not change gets 304 and no body
  app.use(kit.path('/api/*'), etag());
  if (opts.observe) app.route(base || '/', metricsRoutes(opts.observe));

  for (const area of AREAS) area(app, kit);
  return app;
}
