/**
 * What every adapter's Storage is made of: one object per aggregate, each built over the
 * adapter's database handle. The list lives here once, so an adapter's index.ts names its
 * classes in one table and a new aggregate is added in one place.
 */
import type { Storage } from '../core/storage.js';

export const AGGREGATES = ['jobs', 'leases', 'attempts', 'effects', 'schedules', 'locks', 'workers', 'queues', 'alerts', 'diagnostics', 'workflows'] as const;
export type AggregateName = (typeof AGGREGATES)[number];

/** An adapter's class for each aggregate, made from its database handle. */
export type AggregateClasses<D> = { readonly [K in AggregateName]: new (db: D) => Storage[K] };

/** The base of every adapter's Storage: its aggregates, typed by the contract (the adapter's classes stay its own). */
export abstract class AggregateStorage<D, C extends AggregateClasses<D>> {
  /** the job rows */
  declare readonly jobs: Storage['jobs'];
  /** claims, renewals and finishes of running jobs */
  declare readonly leases: Storage['leases'];
  /** each job's attempt history */
  declare readonly attempts: Storage['attempts'];
  /** the effect ledger behind `ctx.once` */
  declare readonly effects: Storage['effects'];
  /** cron and interval schedules */
  declare readonly schedules: Storage['schedules'];
  /** distributed locks and semaphores */
  declare readonly locks: Storage['locks'];
  /** worker processes and their heartbeats */
  declare readonly workers: Storage['workers'];
  /** per-queue counts, health, pause and resume */
  declare readonly queues: Storage['queues'];
  /** alert rules' states */
  declare readonly alerts: Storage['alerts'];
  /** read-only facts for `leasehold doctor` */
  declare readonly diagnostics: Storage['diagnostics'];
  /** results, progress and dependencies between jobs */
  declare readonly workflows: Storage['workflows'];

  protected constructor(
    /** @internal the adapter's database handle */
    protected readonly db: D,
    classes: C,
  ) {
    const self = this as unknown as Record<AggregateName, unknown>;
    for (const name of AGGREGATES) self[name] = new classes[name](db);
  }
}

/** One aggregate of a SQL adapter: its database handle and its statements, built for its schema or table prefix. */
export abstract class SqlAggregate<D, S> {
  protected constructor(
    protected readonly db: D,
    protected readonly sql: S,
  ) {}
}
