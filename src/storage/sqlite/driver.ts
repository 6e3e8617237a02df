/**
 * The two SQLite drivers behind one small interface: better-sqlite3 (the default, a native
 * Node-API module) and `node:sqlite` (built into Node ≥ 22.13, no native module at all).
 * Each is loaded only when chosen, so a `node:sqlite` user never loads the addon.
 */
import { createRequire } from 'node:module';
import { ValidationError } from '../../core/errors.js';

/** The SQLite drivers the adapter runs on: better-sqlite3 (a native module) or Node's built-in `node:sqlite`. */
export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';
/** Every {@link SqliteDriverName}. */
export const SQLITE_DRIVERS: readonly SqliteDriverName[] = ['better-sqlite3', 'node:sqlite'];

export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface SqliteConnection {
  readonly driver: SqliteDriverName;
  /** `raw`: rows as arrays instead of objects */
  prepare(sql: string, raw?: boolean): SqliteStatement;
  exec(sql: string): void;
  /** `PRAGMA body`, returning its rows */
  pragma(body: string): unknown[];
  /** Run fn in BEGIN IMMEDIATE; commit on return, roll back on throw. */
  immediate<T>(fn: () => T): T;
  readonly open: boolean;
  close(): void;
}

/** The driver an option names (default better-sqlite3); ValidationError for any other. */
export function checkDriver(name: unknown): SqliteDriverName {
  if (name === undefined) return 'better-sqlite3';
  if (SQLITE_DRIVERS.includes(name as SqliteDriverName)) return name as SqliteDriverName;
  throw new ValidationError('INVALID_URL', `unknown SQLite driver ${JSON.stringify(name)}; expected ${SQLITE_DRIVERS.join(' or ')}`);
}

/** SQLite's primary result code of a driver error (5 BUSY, 6 LOCKED, 19 CONSTRAINT…), or null. */
export function sqliteErrorCode(e: unknown): number | null {
  const err = e as { code?: unknown; errcode?: unknown } | null;
  // node:sqlite: the extended code as a number
  if (typeof err?.errcode === 'number') return err.errcode & 0xff;
  // better-sqlite3: the extended code's name
  if (typeof err?.code === 'string' && err.code.startsWith('SQLITE_')) return PRIMARY[err.code.slice(7).split('_')[0] ?? ''] ?? null;
  return null;
}
const PRIMARY: Record<string, number> = { BUSY: 5, LOCKED: 6, CONSTRAINT: 19 };

const require = createRequire(import.meta.url);

export function openSqlite(path: string, driver: SqliteDriverName): SqliteConnection {
  return driver === 'node:sqlite' ? openNodeSqlite(path) : openBetterSqlite(path);
}

function openBetterSqlite(path: string): SqliteConnection {
  const Database = require('better-sqlite3') as typeof import('better-sqlite3');
  // SQLite's busy handler off: the caller waits for a busy write lock itself
  const db = new Database(path, { timeout: 0 });
  const tx = db.transaction((fn: () => unknown) => fn());
  return {
    driver: 'better-sqlite3',
    prepare: (sql, raw = false) => {
      const s = db.prepare(sql);
      if (raw) s.raw(true);
      return s as unknown as SqliteStatement;
    },
    exec: (sql) => void db.exec(sql),
    pragma: (body) => db.pragma(body) as unknown[],
    immediate: <T>(fn: () => T) => tx.immediate(fn) as T,
    get open() {
      return db.open;
    },
    close: () => db.close(),
  };
}

function openNodeSqlite(path: string): SqliteConnection {
  const sqlite = process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite') | undefined;
  if (sqlite === undefined) throw new Error('node:sqlite is not available in this Node.js (it needs Node 22.13 or later)');
  const db = new sqlite.DatabaseSync(path, { timeout: 0 });
  return {
    driver: 'node:sqlite',
    prepare: (sql, raw = false) => {
      const s = db.prepare(sql);
      // better-sqlite3 ignores named parameters a statement does not use; the adapter relies on it
      s.setAllowUnknownNamedParameters(true);
      if (raw) s.setReturnArrays(true);
      return s as unknown as SqliteStatement;
    },
    exec: (sql) => db.exec(sql),
    pragma: (body) => db.prepare(`PRAGMA ${body}`).all(),
    immediate: <T>(fn: () => T): T => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const r = fn();
        db.exec('COMMIT');
        return r;
      } catch (e) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw e;
      }
    },
    get open() {
      return db.isOpen;
    },
    close: () => db.close(),
  };
}
