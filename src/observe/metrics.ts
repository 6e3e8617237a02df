/**
 * leasehold's Prometheus metrics, on prom-client: what the workers of this process do (told
 * by the observer they are given) and what the database holds (sampled at a bounded rate by
 * one process of the cluster: db-sampler.ts). Names follow Prometheus conventions: units in
 * the name, `_total` on counters. See docs/operations.md for the table.
 */
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Storage } from '../core/storage.js';
import type { WorkerObserver } from '../runtime/observer.js';
import { registerDbMetrics } from './db-metrics.js';
import { DbSampler } from './db-sampler.js';
import { InProcessMetrics } from './metrics-observer.js';

/** What the in-flight gauge reads from a worker (a `Worker` is one). */
/** What the metrics read from a worker (a {@link Worker} is one). */
export interface WorkerLike {
  /** the `worker` label */
  readonly id: string;
  /** jobs it holds now */
  readonly inFlight: number;
  /** `stopped` drops it from the metrics */
  readonly state: string;
}

/** Options for {@link createMetrics}. */
export interface MetricsOptions {
  /** the database the jobs, queues and workers metrics are sampled from; without it only in-process metrics */
  storage?: Storage;
  /** workers whose jobs in flight are shown (more later with `track`) */
  workers?: readonly WorkerLike[];
  /** register into this registry instead of a new one (names must not clash with what it holds) */
  registry?: Registry;
  /** also collect prom-client's default process and Node.js metrics (default false: an app usually does it already) */
  defaultMetrics?: boolean;
  /**
   * how often the database may be sampled: a sample is reused until it is `intervalMs` old
   * (default 15 s, at least 5 s), and only one process of the cluster samples; false: never
   */
  sampling?: {
    /** the longest a sample is reused, in ms (default 15 s, at least 5 s) */
    intervalMs?: number;
    /** told when a sample fails (default: ignored; the next scrape tries again) */
    onError?: (e: unknown) => void;
  } | false;
}

/** leasehold's Prometheus metrics, from {@link createMetrics}. */
export interface Metrics {
  /** the prom-client registry holding leasehold's metrics; merge it into yours with `Registry.merge` */
  readonly registry: Registry;
  /** give it to a Worker: `new Worker({ …, observers: [metrics.observer] })` */
  readonly observer: WorkerObserver;
  /** show this worker's jobs in flight (a worker made after the metrics) */
  track(worker: WorkerLike): void;
  /** The exposition text and its content type, as `/metrics` answers. */
  scrape(): Promise<{
    /** the `Content-Type` to answer with */
    contentType: string;
    /** the metrics as text */
    body: string;
  }>;
  /** Give up the database sampler's lock (call at shutdown, after the workers stopped). */
  close(): Promise<void>;
}

/**
 * Prometheus metrics for leasehold's workers and database.
 *
 * @example
 * ```ts
 * const metrics = createMetrics({ storage });
 * const worker = new Worker({ storage, jobs, observers: [metrics.observer] });
 * metrics.track(worker);
 * // your own /metrics: Registry.merge([register, metrics.registry]).metrics()
 * ```
 */
export function createMetrics(opts: MetricsOptions = {}): Metrics {
  const registry = opts.registry ?? new Registry();
  const inProcess = new InProcessMetrics(registry);
  const workers = new Set<WorkerLike>(opts.workers ?? []);
  new Gauge({
    name: 'leasehold_worker_jobs_in_flight',
    help: 'Jobs a worker of this process holds (running, starting or claimed and waiting), by worker id',
    labelNames: ['worker'],
    registers: [registry],
    collect() {
      this.reset();
      for (const w of workers) {
        if (w.state === 'stopped') workers.delete(w);
        else this.set({ worker: w.id }, w.inFlight);
      }
    },
  });
  const sampler = opts.storage && opts.sampling !== false ? new DbSampler(opts.storage, opts.sampling ?? {}) : undefined;
  if (sampler) registerDbMetrics(registry, sampler);
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    observer: inProcess.observer,
    track: (w) => void workers.add(w),
    scrape: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
    close: async () => {
      await sampler?.close();
    },
  };
}
