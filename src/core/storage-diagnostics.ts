/**
 * The facts of the diagnostics aggregate: what only an adapter can see of its database (the
 * indexes its migrations create, table sizes, the settings it runs with). Types only; judging
 * them is core/doctor.ts's job, and ./storage.ts re-exports everything here.
 */
import type { JobStatus } from './status.js';

/** An index the migrations create, and what the database holds under its name. */
export interface IndexFact {
  /** the table it belongs to */
  table: string;
  /** its name */
  name: string;
  /** invalid: PostgreSQL has it but will not use it (an interrupted CREATE INDEX CONCURRENTLY) */
  state: 'present' | 'missing' | 'invalid';
  /** the statement that creates it, as the migrations wrote it (the fix for a missing one) */
  definition: string;
}

/** One of leasehold's tables and its size. */
export interface TableFact {
  /** the table's name */
  name: string;
  /** rows (from the planner's statistics when `estimated`); null when unknown */
  rows: number | null;
  /** bytes on disk, indexes included; null when the database cannot tell cheaply */
  bytes: number | null;
  /** whether `rows` is an estimate */
  estimated: boolean;
}

/** A setting the database runs with, named `<database>.<setting>`, e.g. `mysql.binlog_format`. */
export interface SettingFact {
  /** `<database>.<setting>` */
  name: string;
  /** as the database reports it; null when it could not be read */
  value: string | null;
  /** where it applies, when that helps (SQLite's filesystem: the mount point) */
  detail?: string;
}

/** What `diagnostics.inspect()` saw of the database. */
export interface StorageFacts {
  /** every index the migrations create */
  indexes: IndexFact[];
  /** leasehold's tables */
  tables: TableFact[];
  /** the whole database's size in bytes, when the adapter knows it (SQLite: the file) */
  databaseBytes: number | null;
  /** the settings its guarantees depend on */
  settings: SettingFact[];
}

/** Which finished jobs count as past retention: as `jobs.prune`'s params, without a limit. */
export interface PrunableQuery {
  /** the finished statuses to count */
  statuses: readonly JobStatus[];
  /** finished longer ago than this, in ms */
  olderThanMs: number;
}
