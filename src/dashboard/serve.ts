/**
 * `serveDashboard`: the dashboard on its own Node HTTP server. Refuses a non-loopback host
 * without a token. Resolves once listening; `close()` stops accepting and ends idle keep-alive
 * connections (the storage belongs to the caller and stays open).
 */
import type { Server } from 'node:http';
import { type ObserveEndpoints, listen } from '../observe/server.js';
import type { DashboardClient } from './app.js';
import { createDashboard } from './app.js';

/** Options for {@link serveDashboard}: the dashboard's options plus where to listen. */
export interface ServeDashboardOptions {
  /** what the pages read and act through, e.g. `withOperatorApi(client)` */
  client: DashboardClient;
  /** 0 picks a free port (see `url` / `port` on the result) */
  port: number;
  /** default 127.0.0.1; any other interface requires a token */
  host?: string | undefined;
  /** the secret operators sign in with; required off loopback, at least 16 characters */
  token?: string | undefined;
  /** the path prefix it answers under, e.g. '/admin/jobs' (default: the root) */
  basePath?: string | undefined;
  /** extra origins allowed to POST (see DashboardOptions.allowedOrigins) */
  allowedOrigins?: readonly string[] | undefined;
  /** with a token: Host names it answers for besides loopback and `host` (see DashboardOptions.allowedHosts) */
  allowedHosts?: readonly string[] | undefined;
  /** how often open pages poll for fresh numbers, ms (default 3000; 0: never) */
  pollMs?: number | undefined;
  /** `/metrics`, `/healthz` and `/readyz` on the dashboard too (see DashboardOptions.observe) */
  observe?: ObserveEndpoints | undefined;
}

/** A dashboard {@link serveDashboard} started. */
export interface RunningDashboard {
  /** the dashboard's address, base path included */
  url: string;
  /** the port it listens on (the one picked when `port` was 0) */
  port: number;
  /** the underlying Node HTTP server */
  server: Server;
  /** Stops listening; resolves once open connections have closed. */
  close(): Promise<void>;
}

/**
 * Serves the dashboard on its own HTTP server.
 *
 * @example
 * ```ts
 * const dashboard = await serveDashboard({ client: withOperatorApi(client), port: 8080 });
 * console.log(dashboard.url);
 * ```
 */
export async function serveDashboard(opts: ServeDashboardOptions): Promise<RunningDashboard> {
  const host = opts.host ?? '127.0.0.1';
  const { port: _port, ...dashboard } = opts;
  const app = createDashboard({ ...dashboard, host });
  const running = await listen(app.fetch, opts.port, host);
  return { ...running, url: `${running.origin}${opts.basePath && opts.basePath !== '/' ? opts.basePath.replace(/\/+$/, '') : ''}/` };
}
