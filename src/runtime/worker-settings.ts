/**
 * A worker's options checked and defaulted: a bad numeric value is a typed error from the
 * constructor, before anything is registered or started; the sweeper's settings follow the
 * lease length. The options themselves are described in worker-options.ts.
 */
import { DEFAULT_LEASE_MS, type QueueFlow, ValidationError, sweepInterval, validateQueueFlows } from '../core/index.js';
import type { SweeperOptions } from './sweeper.js';
import type { WorkerOptions } from './worker-options.js';

export interface WorkerSettings {
  concurrency: number;
  /** the bufferSize option, or null for the automatic, time-based size */
  fixedBuffer: number | null;
  queues: readonly string[] | null;
  /** the queueLimits option checked, queues without a limit left out; undefined when none is limited */
  queueFlow: Record<string, QueueFlow> | undefined;
  leaseMs: number;
  pollMs: number;
  random: () => number;
}

/** The settings a Worker runs with; the first bad option throws. */
export function workerSettings(opts: WorkerOptions): WorkerSettings {
  return {
    concurrency: positiveInt('concurrency', opts.concurrency ?? 10),
    fixedBuffer: opts.bufferSize === undefined ? null : positiveInt('bufferSize', opts.bufferSize, 0),
    queues: opts.queues ?? null,
    queueFlow: validateQueueFlows(opts.queueLimits),
    leaseMs: positiveInt('leaseMs', opts.leaseMs ?? DEFAULT_LEASE_MS, 20),
    pollMs: positiveInt('pollIntervalMs', opts.pollIntervalMs ?? 1_000, 1),
    random: opts.random ?? Math.random,
  };
}

/** What the worker's own sweeper runs with: interval and silence follow the lease length. */
export function sweeperSettings(opts: WorkerOptions, leaseMs: number): SweeperOptions {
  return {
    intervalMs: opts.sweepIntervalMs ?? sweepInterval(leaseMs),
    retention: opts.retention ?? {},
    workerSilenceMs: Math.max(60_000, leaseMs * 3),
  };
}

function positiveInt(name: string, v: number, min = 1): number {
  if (!Number.isInteger(v) || v < min) throw new ValidationError('INVALID_OPTION', `${name} must be an integer >= ${min}; got ${String(v)}`);
  return v;
}
