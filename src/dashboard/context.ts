/**
 * What every route file gets (`Kit`) and how it plugs in (`Area`): an area is a function that
 * adds its routes to the app. The middleware in app.ts has already checked the host, the
 * session or bearer token, and the CSRF token of every POST by the time a route runs.
 */
import type { Context, Hono } from 'hono';
import type { DashboardClient } from './client.js';
import type { Html, PageContext, PageSpec, Prefs } from './layout.js';

/** The dashboard app's Hono environment: what its middleware sets on each request for the routes. */
export type Env = {
  /** per-request values */
  Variables: {
    /** the session's id */
    sid: string;
    /** the session's CSRF token */
    csrf: string;
    /** a session past the login page, or a bearer token */
    loggedIn: boolean;
  };
};
export type App = Hono<Env>;
export type Ctx = Context<Env>;
export type Status = 200 | 400 | 401 | 403 | 404 | 409 | 429 | 500;

export class HttpError extends Error {
  constructor(
    readonly status: Status,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A destructive action's question, asked before it runs (a page without JS, a dialog with). */
export interface Confirmation {
  title: string;
  question: string;
  /** the button that goes ahead */
  label: string;
  /** where "Back" goes */
  back: string;
}

export interface Kit {
  client: DashboardClient;
  base: string;
  /** the path under the base: path('/jobs') */
  path(p: string): string;
  page(c: Ctx): PageContext;
  prefs(c: Ctx): Prefs;
  /** a page in the frame */
  render(c: Ctx, spec: PageSpec, status?: Status): Response | Promise<Response>;
  /** a bare page (sign-in, errors) */
  plain(c: Ctx, title: string, body: Html, status?: Status): Response | Promise<Response>;
  /** JSON with <, > and & escaped */
  json(c: Ctx, body: unknown, status?: Status): Response;
  /** the POSTed form (already read by the CSRF check) */
  form(c: Ctx): Promise<Record<string, string>>;
  /**
   * Null when the POST carries `confirmed=1`; otherwise the confirmation page to answer with
   * (the same form again, with the flag), and nothing is done.
   */
  confirm(c: Ctx, ask: Confirmation): Promise<Response | null>;
  /** a redirect after a POST */
  back(c: Ctx, to: string): Response;
  /** the sign-in pieces, for the auth area */
  auth: AuthKit;
}

export interface AuthKit {
  tokenRequired: boolean;
  checkToken(candidate: string): boolean;
  /** a fresh session id and its CSRF token, set as the session cookie */
  startSession(c: Ctx): string;
  /** mark the session signed in (server-side, with its expiry) and set the auth cookie */
  signIn(c: Ctx, sid: string): void;
  /** end the session on the server and drop the auth cookie */
  signOut(c: Ctx): void;
  /** the client's address for throttling */
  clientAddress(c: Ctx): string;
  throttle: { check(client: string): number; failed(client: string): void };
}

/** One area of the dashboard: adds its routes (pages, JSON, actions) to the app. */
export type Area = (app: App, kit: Kit) => void;
