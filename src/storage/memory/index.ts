/**
 * leasehold/memory: the Storage contract kept in process memory, for unit tests (one process,
 * no persistence). It passes the same conformance suite as the SQL adapters; "now" is the
 * injected clock, and rows handed out are always copies.
 */
import { AggregateStorage } from '../aggregates.js';
import type { Capabilities, MigrateResult, Storage } from '../../core/storage.js';
import { MemoryAlerts } from './alerts.js';
import { MemoryDiagnostics } from './diagnostics.js';
import { MemoryAttempts } from './attempts.js';
import { MemoryDb } from './db.js';
import { MemoryEffects } from './effects.js';
import { MemoryJobs } from './jobs.js';
import { MemoryLeases } from './leases.js';
import { MemoryLocks } from './locks.js';
import { MemoryQueues } from './queues.js';
import { MemorySchedules } from './schedules.js';
import { MemoryWorkers } from './workers.js';
import { MemoryWorkflowReads } from './workflow-reads.js';

/** Options for {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /** the "database clock", epoch milliseconds; default Date.now */
  clock?: () => number;
}

/** The same history as the SQL adapters; in memory there is nothing to build. */
const MIGRATIONS = [{ version: 1, name: 'baseline' }];
const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

const MEMORY_AGGREGATES = { jobs: MemoryJobs, leases: MemoryLeases, attempts: MemoryAttempts, effects: MemoryEffects, schedules: MemorySchedules, locks: MemoryLocks, workers: MemoryWorkers, queues: MemoryQueues, alerts: MemoryAlerts, diagnostics: MemoryDiagnostics, workflows: MemoryWorkflowReads } as const;

export class MemoryStorage extends AggregateStorage<MemoryDb, typeof MEMORY_AGGREGATES> implements Storage {
  readonly dialect = 'memory';
  readonly expectedSchemaVersion = SCHEMA_VERSION;
  readonly capabilities: Capabilities = { multiProcess: false, transactionalEnqueue: false, listenNotify: false };

  private version = 0;

  constructor(opts: MemoryStorageOptions = {}) {
    super(new MemoryDb(opts.clock ?? Date.now), MEMORY_AGGREGATES);
  }

  async migrate(): Promise<MigrateResult> {
    this.db.now();
    const from = this.version;
    this.version = SCHEMA_VERSION;
    return { from, to: this.version, applied: MIGRATIONS.filter((m) => m.version > from) };
  }

  async schemaVersion(): Promise<number> {
    return this.version;
  }

  async close(): Promise<void> {
    this.db.close();
  }

  async now(): Promise<Date> {
    return this.db.now();
  }
}

/** An in-process storage for tests and demos: one process only, nothing persists. */
export function memoryStorage(opts?: MemoryStorageOptions): MemoryStorage {
  return new MemoryStorage(opts);
}
