/**
 * The facts of the diagnostics aggregate: what only an adapter can see of its database (the
 * indexes its migrations create, table sizes, the settings it runs with). Types only; judging
 * them is core/doctor.ts's job, and ./storage.ts re-exports everything here.
 */
import type { JobStatus } from './status.js';

/** An index the migrations create, and what the database holds under its name. */
export interface IndexFact {
  table: string;
  name: string;
  /** invalid: PostgreSQL has it but will not use it (an interrupted CREATE INDEX CONCURRENTLY) */
  state: 'present' | 'missing' | 'invalid';
  /** the statement that creates it, as the migrations wrote it (the fix for a missing one) */
  definition: string;
}

export interface TableFact {
  name: string;
  /** rows (from the planner's statistics when `estimated`); null when unknown */
  rows: number | null;
  /** bytes on disk, indexes included; null when the database cannot tell cheaply */
  bytes: number | null;
  estimated: boolean;
}

/** A setting the database runs with, named `<database>.<setting>`, e.g. `mysql.binlog_format`. */
export interface SettingFact {
  name: string;
  /** as the database reports it; null when it could not be read */
  value: string | null;
  /** where it applies, when that helps (SQLite's filesystem: the mount point) */
  detail?: string;
}

export interface StorageFacts {
  indexes: IndexFact[];
  tables: TableFact[];
  /** the whole database's size in bytes, when the adapter knows it (SQLite: the file) */
  databaseBytes: number | null;
  settings: SettingFact[];
}

/** Which finished jobs count as past retention: as `jobs.prune`'s params, without a limit. */
export interface PrunableQuery {
  statuses: readonly JobStatus[];
  olderThanMs: number;
}
