/**
 * One database under chaos: a SQLite file, or a throwaway PostgreSQL / MariaDB server
 * (servers.ts) with the jobs in schema / database `chaos`. Workers connect under a name of
 * their own (PostgreSQL application_name, MariaDB user), so their connections can be killed
 * without the runner's; the runner's storage enqueues and watches. What the audit needs behind
 * the storage's back (every attempt row) goes through a fresh connection each time, so it works
 * across a server restart.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { AttemptRow } from '../../src/core/index.js';
import type { Storage } from '../../src/core/storage.js';
import { run as mysqlRun } from '../../src/storage/mysql/db.js';
import { toAttemptRow as mysqlAttemptRow } from '../../src/storage/mysql/sql.js';
import { openStorage } from '../../src/storage/open.js';
import { sqliteWriteLockFree } from '../process/support.js';
import { toAttemptRow as pgAttemptRow } from '../../src/storage/postgres/sql.js';
import { HOLDS_SUCCESS, toAttemptRow as sqliteAttemptRow } from '../../src/storage/sqlite/sql.js';
import type { DbKind } from '../process/support-db.js';
import type { ThrowawayServer } from './servers.js';
import { startMariaDb, startPostgres } from './servers.js';

export type { DbKind } from '../process/support-db.js';

/** Prefix of each worker's PostgreSQL application_name / MariaDB user: whose connections a kill aims at. */
const WORKER_TAG = 'lh_chaos_worker';

/** The connection tag of the worker numbered `n`. */
export const workerTag = (n: number): string => `${WORKER_TAG}_${n}`;

export interface ChaosDb {
  kind: DbKind;
  /** what the worker tagged `tag` gets via --db */
  workerUrl(tag: string): string;
  /** the runner's own storage */
  storage: Storage;
  /** the throwaway server (null: SQLite) */
  server: ThrowawayServer | null;
  /** where the server keeps its data and log ('' for SQLite) */
  serverDir: string;
  /** kill every server connection of the workers; resolves to how many */
  killConnections(): Promise<number>;
  /** every attempt row the database holds */
  allAttempts(): Promise<AttemptRow[]>;
  /**
   * Nothing of the worker tagged `tag` is inside a transaction (SQLite: nobody holds the write
   * lock), so stopping it now blocks no other process: it only lets its leases lapse.
   */
  outsideTransactions(tag: string): Promise<boolean>;
  close(): Promise<void>;
}

/** Open the database of `kind`: SQLite in `dir`, a server in a temp dir of its own. */
export async function openChaosDb(kind: DbKind, dir: string): Promise<ChaosDb> {
  if (kind === 'sqlite') return openSqlite(dir);
  const serverDir = mkdtempSync(path.join(tmpdir(), `leasehold-chaos-${kind}-`));
  const server = kind === 'postgres' ? await startPostgres(serverDir) : await startMariaDb(serverDir);
  try {
    return kind === 'postgres' ? await openPostgres(server, serverDir) : await openMysql(server, serverDir);
  } catch (e) {
    await server.destroy();
    throw e;
  }
}

async function openSqlite(dir: string): Promise<ChaosDb> {
  const file = path.join(dir, 'chaos.db');
  const storage = await openStorage(`sqlite:${file}`);
  await storage.migrate();
  return {
    kind: 'sqlite',
    workerUrl: () => `sqlite:${file}`,
    storage,
    server: null,
    serverDir: '',
    killConnections: () => Promise.reject(new Error('sqlite has no connections to kill')),
    allAttempts: async () => {
      const db = new Database(file, { readonly: true, timeout: 10_000 });
      try {
        // every attempt, in one read: the history rows, and the successes their job rows keep (as attempts.list reads them)
        return (db.prepare(`SELECT id, job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome,
            error_code, error_message, error_stack, retry_delay_ms, wait_ms FROM leasehold_job_attempts
          UNION ALL
          SELECT 'succeeded:' || id, id, attempts, locked_by, lease_token, started_at, finished_at, max(0, finished_at - started_at), 'succeeded',
            NULL, NULL, NULL, NULL, max(0, started_at - run_at) FROM leasehold_jobs WHERE ${HOLDS_SUCCESS}
          ORDER BY job_id, attempt, id`).all() as Record<string, unknown>[]).map(sqliteAttemptRow);
      } finally {
        db.close();
      }
    },
    // takes the write lock if nobody holds it, and gives it back at once
    outsideTransactions: async () => sqliteWriteLockFree(file, 100),
    close: () => storage.close(),
  };
}

async function withPg<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, application_name: 'lh_chaos_admin' });
  c.on('error', () => {});
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end().catch(() => {});
  }
}

async function openPostgres(server: ThrowawayServer, serverDir: string): Promise<ChaosDb> {
  const url = (app: string) => `${server.adminUrl}?schema=chaos&application_name=${app}`;
  const storage = await openStorage(url('lh_chaos_runner'), { poolSize: 4 });
  await storage.migrate();
  return {
    kind: 'postgres',
    workerUrl: url,
    storage,
    server,
    serverDir,
    killConnections: () =>
      withPg(server.adminUrl, async (c) => {
        // the workers' backends, their LISTEN connections included
        const res = await c.query('SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name LIKE $1 AND pid <> pg_backend_pid()', [`${WORKER_TAG}_%`]);
        return res.rows.filter((r: { killed: boolean }) => r.killed).length;
      }),
    allAttempts: () =>
      withPg(server.adminUrl, async (c) => {
        // every attempt, in one read
        const res = await c.query('SELECT * FROM chaos.job_attempts ORDER BY job_id, attempt, id');
        return res.rows.map(pgAttemptRow);
      }),
    outsideTransactions: (tag) =>
      withPg(server.adminUrl, async (c) => {
        // the worker's backends that are running a statement or waiting inside a transaction
        const res = await c.query("SELECT count(*)::int AS busy FROM pg_stat_activity WHERE application_name IN ($1, $1 || '-listener') AND state <> 'idle'", [tag]);
        return res.rows[0].busy === 0;
      }),
    close: () => storage.close(),
  };
}

async function withMysql<T>(url: string, f: (c: mysql.Connection) => Promise<T>): Promise<T> {
  const c = await mysql.createConnection(url);
  c.on('error', () => {});
  try {
    return await f(c);
  } finally {
    await c.end().catch(() => {});
  }
}

async function openMysql(server: ThrowawayServer, serverDir: string): Promise<ChaosDb> {
  // the database the jobs live in
  await withMysql(server.adminUrl, (c) => c.query('CREATE DATABASE chaos CHARACTER SET utf8mb4'));
  const base = new URL(server.adminUrl);
  base.pathname = '/chaos';
  const storage = await openStorage(base.toString(), { poolSize: 4 });
  await storage.migrate();
  return {
    kind: 'mysql',
    workerUrl: (tag) => {
      const u = new URL(base);
      u.username = tag;
      return u.toString();
    },
    storage,
    server,
    serverDir,
    killConnections: () =>
      withMysql(server.adminUrl, async (c) => {
        // the workers' connections: every one opened under their user name
        const [rows] = await c.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER LIKE ?', [`${WORKER_TAG}\\_%`]);
        let killed = 0;
        for (const r of rows as { id: number }[]) {
          // a connection that closed meanwhile answers "Unknown thread id"
          await c.query(`KILL CONNECTION ${Number(r.id)}`).then(() => killed++, () => {});
        }
        return killed;
      }),
    allAttempts: () =>
      withMysql(server.adminUrl, async (c) =>
        // every attempt, in one read
        (await mysqlRun<Record<string, unknown>[]>(c, 'SELECT * FROM chaos.leasehold_job_attempts ORDER BY job_id, attempt, id')).map(mysqlAttemptRow),
      ),
    outsideTransactions: (tag) =>
      withMysql(server.adminUrl, async (c) => {
        // the worker's connections that are running a statement or hold an open transaction; the one
        // parked for wake-ups (SELECT SLEEP outside any transaction) holds no lock
        const [rows] = await c.query(
          `SELECT count(*) AS busy FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
           WHERE p.USER = ? AND (t.trx_id IS NOT NULL OR (p.COMMAND <> 'Sleep' AND coalesce(INSTR(p.INFO, '-- leasehold park: '), 0) <> 1))`,
          [tag],
        );
        return Number((rows as { busy: number }[])[0]?.busy) === 0;
      }),
    close: () => storage.close(),
  };
}
