/**
 * Storages of each kind whose "now" the model-based test sets: memory and SQLite through their
 * injectable clock; PostgreSQL through a now() of the test's schema, found before pg_catalog's
 * on the session's search_path and read from a one-row table; MySQL/MariaDB through the
 * session's `timestamp` (which UTC_TIMESTAMP follows) on a pool of one connection. Each run
 * gets an empty database: a new one in process, the server one emptied.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type mysql from 'mysql2/promise';
import pg from 'pg';
import type { Storage } from '../../src/core/storage.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { TEST_URLS } from '../support/databases.js';
import type { StorageKind } from './support-storages.js';
import { dropMysqlTables, dropPostgresSchema } from './support-storages.js';

export interface ClockedStorage {
  storage: Storage;
  /** move the database's clock to `ms` (epoch) */
  setNow(ms: number): Promise<void>;
}

export interface ClockedDatabase {
  /** an empty, migrated database whose clock reads `startMs` */
  fresh(startMs: number): Promise<ClockedStorage>;
  close(): Promise<void>;
}

/** The test's databases of `kind`. */
export async function clockedDatabase(kind: StorageKind): Promise<ClockedDatabase> {
  if (kind === 'postgres') return clockedPostgres();
  if (kind === 'mysql') return clockedMysql();
  let close = async () => {};
  return {
    fresh: async (startMs) => {
      await close();
      let now = startMs;
      const dir = kind === 'sqlite' ? mkdtempSync(path.join(tmpdir(), 'leasehold-model-')) : null;
      const storage = dir === null ? memoryStorage({ clock: () => now }) : sqliteStorage({ path: path.join(dir, 'jobs.db'), clock: () => now });
      close = () => storage.close().finally(() => dir !== null && rmSync(dir, { recursive: true, force: true }));
      await storage.migrate();
      return { storage, setNow: async (ms) => void (now = ms) };
    },
    close: () => close(),
  };
}

async function clockedPostgres(): Promise<ClockedDatabase> {
  const schema = `lh_model_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_URLS.postgres });
  await admin.connect();
  // the schema's now() comes before pg_catalog's for the adapter's sessions (and its migration's defaults)
  await admin.query(`CREATE SCHEMA "${schema}"`);
  // the test's clock: one row
  await admin.query(`CREATE TABLE "${schema}".model_clock (now timestamptz(3) NOT NULL)`);
  // the clock's first reading
  await admin.query(`INSERT INTO "${schema}".model_clock (now) VALUES (now())`);
  // now() for sessions whose search_path puts this schema first
  await admin.query(`CREATE FUNCTION "${schema}".now() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now FROM "${schema}".model_clock'`);
  const url = new URL(TEST_URLS.postgres);
  url.searchParams.set('options', `-c search_path=${schema},pg_catalog`);
  const storage = postgresStorage({ connectionString: url.toString(), schema, poolSize: 2 });
  const close = async () => {
    await storage.close();
    await admin.end();
    await dropPostgresSchema(schema);
  };
  // move the test's clock
  const setNow = async (ms: number) => void (await admin.query(`UPDATE "${schema}".model_clock SET now = $1`, [new Date(ms)]));
  try {
    await storage.migrate();
  } catch (e) {
    await close();
    throw e;
  }
  return {
    fresh: async (startMs) => {
      // the previous run's jobs, their attempts and effects
      await admin.query(`TRUNCATE "${schema}".jobs, "${schema}".job_attempts, "${schema}".effects`);
      await setNow(startMs);
      return { storage, setNow };
    },
    close,
  };
}

async function clockedMysql(): Promise<ClockedDatabase> {
  const prefix = `lh_model_${randomBytes(4).toString('hex')}_`;
  const storage = mysqlStorage({ uri: TEST_URLS.mysql, tablePrefix: prefix, poolSize: 1 });
  // the adapter's own pool (the one production uses), reached past `private`: its one connection's session clock
  const pool = (storage as unknown as { ownPool: mysql.Pool }).ownPool;
  let now = Date.now();
  // a connection opened again (after an error) starts on the test's clock too
  pool.on('connection', (c) => void c.query('SET timestamp = ?', [now / 1_000]));
  const setNow = async (ms: number) => {
    now = ms;
    // the session's clock, which UTC_TIMESTAMP(6) reads
    await pool.query('SET timestamp = ?', [ms / 1_000]);
  };
  const close = () => storage.close().finally(() => dropMysqlTables(prefix));
  try {
    await storage.migrate();
  } catch (e) {
    await close();
    throw e;
  }
  return {
    fresh: async (startMs) => {
      // the previous run's attempts, effects and jobs
      for (const table of ['job_attempts', 'effects', 'jobs']) await pool.query(`DELETE FROM \`${prefix}${table}\``);
      await setNow(startMs);
      return { storage, setNow };
    },
    close,
  };
}
