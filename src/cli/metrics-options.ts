/**
 * `leasehold worker --metrics-port N`: Prometheus metrics, `/healthz` and `/readyz` on their
 * own port, started with the worker and closed after it stopped. Without a flag, nothing.
 */
import type { Command } from 'commander';
import { ValidationError } from '../core/index.js';
import type { Storage } from '../core/storage.js';
import type { Logger } from '../runtime/env.js';
import type { WorkerObserver } from '../runtime/observer.js';
import { createHealth } from '../observe/health.js';
import type { WorkerLike } from '../observe/metrics.js';
import { createMetrics } from '../observe/metrics.js';
import { serveObserve } from '../observe/server.js';
import { parseDuration, parseIntIn } from './parse.js';

export interface MetricsCliOpts {
  metricsPort?: number;
  metricsHost?: string;
  metricsSampleInterval?: number;
}

export function addMetricsOptions(cmd: Command): Command {
  return cmd
    .option('--metrics-port <n>', 'serve Prometheus /metrics, /healthz and /readyz on this port (0: any free port)', parseIntIn(0, 65535))
    .option('--metrics-host <addr>', 'interface for --metrics-port (no authentication: keep it private)', '127.0.0.1')
    .option('--metrics-sample-interval <duration>', 'the database metrics are read at most this often, by one process of the cluster (at least 5s)', parseDuration, 15_000);
}

export interface RunningMetrics {
  observers: WorkerObserver[];
  /** shows the worker's jobs in flight and logs where the server listens */
  attach(worker: WorkerLike & { log: Logger }): void;
  /** Stop serving and give up the sampler's lock. */
  stop(): Promise<void>;
}

/** The metrics server the options ask for, listening; null without --metrics-port. */
export async function startMetrics(o: MetricsCliOpts, storage: Storage): Promise<RunningMetrics | null> {
  if (o.metricsPort === undefined) return null;
  let log: Logger | undefined;
  const onError = (e: unknown) => log?.warn({ event: 'metrics.sample_failed', err: (e as Error).message }, 'could not sample the database for metrics; trying again after the interval');
  let metrics;
  try {
    metrics = createMetrics({ storage, defaultMetrics: true, sampling: { intervalMs: o.metricsSampleInterval ?? 15_000, onError } });
  } catch (e) {
    throw new ValidationError('INVALID_OPTION', (e as Error).message);
  }
  const health = createHealth({ storage });
  const running = await serveObserve({ port: o.metricsPort, host: o.metricsHost, metrics, health });
  return {
    observers: [metrics.observer],
    attach(worker) {
      metrics.track(worker);
      log = worker.log;
      worker.log.info({ event: 'metrics.listening', url: running.url, port: running.port }, `metrics on ${running.url}metrics`);
    },
    async stop() {
      await running.close();
      health.close();
      await metrics.close();
    },
  };
}
