/**
 * Health checks, as probes and load balancers ask them:
 * - liveness (`/healthz`): the process answers and its event loop is not stalled — the largest
 *   event-loop delay since the last check stays under a limit;
 * - readiness (`/readyz`): the database answers within a timeout and its schema is the one this
 *   code's migrations build (behind: run `leasehold migrate`; ahead: upgrade leasehold).
 * Each answers 200 or 503 with a small JSON body naming the reason; nothing in it is secret.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Storage } from '../core/storage.js';

/** One check's answer, ready to send as an HTTP response. */
export interface HealthReport {
  /** 200 when healthy, 503 when not */
  status: 200 | 503;
  /** the JSON body, with details such as `eventLoopDelayMs` */
  body: {
    /** whether the check passed */
    ok: boolean;
    /** why it failed */
    reason?: string;
    [k: string]: unknown;
  };
}

/** Options for {@link createHealth}. */
export interface HealthOptions {
  /** the database `/readyz` checks; without it the process is always ready */
  storage?: Storage;
  /** liveness fails when the event loop stalled longer than this since the last check (default 10 s) */
  maxEventLoopDelayMs?: number;
  /** readiness fails when the database has not answered within this (default 2 s) */
  timeoutMs?: number;
}

/** Liveness and readiness checks, from {@link createHealth}. */
export interface Health {
  /** Liveness: fails when the event loop stalled past `maxEventLoopDelayMs`. */
  healthz(): HealthReport;
  /** Readiness: fails when the database does not answer in time or its schema version is not this code's. */
  readyz(): Promise<HealthReport>;
  /** Stop watching the event loop. */
  close(): void;
}

/**
 * Liveness and readiness checks for a process running leasehold.
 *
 * @example
 * ```ts
 * const health = createHealth({ storage });
 * const { status, body } = await health.readyz(); // 503 { ok: false, reason: 'schema at version 0, …' }
 * ```
 */
export function createHealth(opts: HealthOptions = {}): Health {
  const maxDelayMs = opts.maxEventLoopDelayMs ?? 10_000;
  const timeoutMs = opts.timeoutMs ?? 2_000;
  const loop = monitorEventLoopDelay({ resolution: 20 });
  loop.enable();
  const healthz = (): HealthReport => {
    // nanoseconds; the histogram holds the delays since the last check
    const maxMs = loop.count > 0 ? loop.max / 1e6 : 0;
    loop.reset();
    const eventLoopDelayMs = Math.round(maxMs);
    if (maxMs > maxDelayMs) return { status: 503, body: { ok: false, reason: `the event loop stalled for ${eventLoopDelayMs} ms (limit ${maxDelayMs} ms)`, eventLoopDelayMs } };
    return { status: 200, body: { ok: true, eventLoopDelayMs } };
  };
  return {
    healthz,
    readyz: async () => (opts.storage ? checkDatabase(opts.storage, timeoutMs) : { status: 200, body: { ok: true } }),
    close: () => loop.disable(),
  };
}

async function checkDatabase(storage: Storage, timeoutMs: number): Promise<HealthReport> {
  const expected = storage.expectedSchemaVersion;
  let version: number;
  try {
    version = await within(
      (async () => {
        await storage.now();
        return storage.schemaVersion();
      })(),
      timeoutMs,
    );
  } catch (e) {
    return { status: 503, body: { ok: false, reason: `the ${storage.dialect} database is unreachable: ${(e as Error).message}` } };
  }
  const body = { schemaVersion: version, expectedSchemaVersion: expected };
  if (version < expected) return { status: 503, body: { ok: false, reason: `the schema is at version ${version}, this code needs ${expected}: run \`leasehold migrate\``, ...body } };
  if (version > expected) return { status: 503, body: { ok: false, reason: `the schema is at version ${version}, newer than this code knows (${expected}): upgrade leasehold`, ...body } };
  return { status: 200, body: { ok: true, ...body } };
}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
