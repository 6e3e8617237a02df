/**
 * `/metrics`, `/healthz` and `/readyz` over HTTP: as Hono routes (the dashboard mounts them
 * too) and as a small standalone server, the one `leasehold worker --metrics-port` runs. The
 * standalone server has no authentication: it listens on 127.0.0.1 unless told otherwise.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Health } from './health.js';
import type { Metrics } from './metrics.js';

/** What the observe endpoints answer from; a missing one's paths are not served. */
export interface ObserveEndpoints {
  /** answers `/metrics` (from `createMetrics`) */
  metrics?: Metrics | undefined;
  /** answers `/healthz` and `/readyz` (from `createHealth`) */
  health?: Health | undefined;
}

/** `/healthz` and `/readyz` (nothing when no health checks are given). */
export function healthRoutes(ep: ObserveEndpoints): Hono {
  const app = new Hono();
  const { health } = ep;
  if (!health) return app;
  app.get('/healthz', (c) => {
    const r = health.healthz();
    return c.json(r.body, r.status);
  });
  app.get('/readyz', async (c) => {
    const r = await health.readyz();
    return c.json(r.body, r.status);
  });
  return app;
}

/** `/metrics` in Prometheus' text format (nothing when no metrics are given). */
export function metricsRoutes(ep: ObserveEndpoints): Hono {
  const app = new Hono();
  const { metrics } = ep;
  if (!metrics) return app;
  app.get('/metrics', async (c) => {
    const { contentType, body } = await metrics.scrape();
    return c.body(body, 200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  });
  return app;
}

/** The three endpoints on one Hono app. */
export function createObserveApp(ep: ObserveEndpoints): Hono {
  const app = new Hono();
  app.route('/', healthRoutes(ep));
  app.route('/', metricsRoutes(ep));
  return app;
}

/** Options for {@link serveObserve}: the endpoints and where to listen. */
export interface ServeObserveOptions extends ObserveEndpoints {
  /** 0 picks a free port (see `port` on the result) */
  port: number;
  /** default 127.0.0.1 */
  host?: string | undefined;
}

/** The server {@link serveObserve} started. */
export interface RunningObserve {
  /** its address, e.g. `http://127.0.0.1:9464/` */
  url: string;
  /** the port it listens on (the one picked when `port` was 0) */
  port: number;
  /** the underlying Node HTTP server */
  server: Server;
  /** Stops listening; resolves once open connections have closed. */
  close(): Promise<void>;
}

/**
 * Serve `/metrics`, `/healthz` and `/readyz` on their own port; resolves once listening.
 *
 * @example
 * ```ts
 * const running = await serveObserve({ port: 9464, metrics: createMetrics({ storage }), health: createHealth({ storage }) });
 * ```
 */
export async function serveObserve(opts: ServeObserveOptions): Promise<RunningObserve> {
  const running = await listen(createObserveApp(opts).fetch, opts.port, opts.host ?? '127.0.0.1');
  return { ...running, url: `${running.origin}/` };
}

/**
 * A fetch handler on its own Node HTTP server, resolved once listening (a port of 0 picks a free
 * one); `close()` stops accepting and ends idle keep-alive connections.
 */
export async function listen(fetch: (req: Request) => Response | Promise<Response>, port: number, host: string): Promise<{ origin: string; port: number; server: Server; close(): Promise<void> }> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`port must be 0-65535, got ${port}`);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch, port, hostname: host }) as Server;
    s.once('error', reject);
    s.once('listening', () => {
      s.off('error', reject);
      resolve(s);
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    origin: `http://${shown}:${bound}`,
    port: bound,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
