/**
 * `serveDashboard`: the dashboard on its own Node HTTP server. Refuses a non-loopback host
 * without a token. Resolves once listening; `close()` stops accepting and ends idle keep-alive
 * connections (the storage belongs to the caller and stays open).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { ObserveEndpoints } from '../observe/server.js';
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
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new TypeError(`port must be 0-65535, got ${opts.port}`);
  const app = createDashboard({ client: opts.client, token: opts.token, basePath: opts.basePath, host, allowedOrigins: opts.allowedOrigins, observe: opts.observe });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: opts.port, hostname: host }) as Server;
    s.once('error', reject);
    s.once('listening', () => {
      s.off('error', reject);
      resolve(s);
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shown}:${port}${opts.basePath && opts.basePath !== '/' ? opts.basePath.replace(/\/+$/, '') : ''}/`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
