/**
 * `serveDashboard`: the dashboard on its own Node HTTP server. Refuses a non-loopback host
 * without a token. Resolves once listening; `close()` stops accepting and ends idle keep-alive
 * connections (the storage belongs to the caller and stays open).
 */
import type { Server } from 'node:http';
import { type ObserveEndpoints, listen } from '../observe/server.js';
import type { DashboardClient } from './app.js';
import { createDashboard } from './app.js';

export interface ServeDashboardOptions {
  client: DashboardClient;
  /** 0 picks a free port (see `url` / `port` on the result) */
  port: number;
  /** default 127.0.0.1; any other interface requires a token */
  host?: string | undefined;
  token?: string | undefined;
  basePath?: string | undefined;
  allowedOrigins?: readonly string[] | undefined;
  /** with a token: Host names it answers for besides loopback and `host` (see DashboardOptions.allowedHosts) */
  allowedHosts?: readonly string[] | undefined;
  /** how often open pages poll for fresh numbers, ms (default 3000; 0: never) */
  pollMs?: number | undefined;
  /** `/metrics`, `/healthz` and `/readyz` on the dashboard too (see DashboardOptions.observe) */
  observe?: ObserveEndpoints | undefined;
}

export interface RunningDashboard {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

export async function serveDashboard(opts: ServeDashboardOptions): Promise<RunningDashboard> {
  const host = opts.host ?? '127.0.0.1';
  const { port: _port, ...dashboard } = opts;
  const app = createDashboard({ ...dashboard, host });
  const running = await listen(app.fetch, opts.port, host);
  return { ...running, url: `${running.origin}${opts.basePath && opts.basePath !== '/' ? opts.basePath.replace(/\/+$/, '') : ''}/` };
}
