/**
 * The database side of the process-level sandboxes: which kinds a scenario runs on (server
 * kinds through serverFor, so a missing server skips loudly, or fails when required), and a
 * fresh, private database per sandbox: a SQLite file, a PostgreSQL schema (`lh_p_<random>`,
 * dropped CASCADE afterwards) or a MySQL/MariaDB database (`lh_p_<random>`, dropped
 * afterwards). Also what a test needs behind the storage's back: every attempt row in one
 * query, and killing the workers' connections.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { AttemptRow } from '../../src/core/index.js';
import { run as mysqlRun } from '../../src/storage/mysql/db.js';
import { toAttemptRow as mysqlAttemptRow } from '../../src/storage/mysql/sql.js';
import { toAttemptRow as pgAttemptRow } from '../../src/storage/postgres/sql.js';
import { serverFor } from '../support/databases.js';

export type DbKind = 'sqlite' | 'postgres' | 'mysql';
export const DB_KINDS: readonly DbKind[] = ['sqlite', 'postgres', 'mysql'];
export const SERVER_KINDS: readonly DbKind[] = ['postgres', 'mysql'];

/** A kind a scenario runs on: `server` is the server URL (null for SQLite, or when skipped). */
export interface DbTarget {
  kind: DbKind;
  server: string | null;
  /** node:test's `skip` option: a reason when the server is missing (and not required) */
  skip: string | false;
}

/** Resolve each kind (serverFor reports a missing server loudly, or throws when it is required). */
export async function dbTargets(suite: string, kinds: readonly DbKind[] = DB_KINDS): Promise<DbTarget[]> {
  const out: DbTarget[] = [];
  for (const kind of kinds) {
    if (kind === 'sqlite') {
      out.push({ kind, server: null, skip: false });
      continue;
    }
    const server = await serverFor(kind, `${suite} (${kind})`);
    out.push({ kind, server, skip: server === null ? `${kind} server unreachable (see the SKIPPED line)` : false });
  }
  return out;
}

/** A private database for one sandbox. */
export interface ProvisionedDb {
  kind: DbKind;
  /** what workers get via --db (PostgreSQL: tagged with application_name = `name`) */
  url: string;
  /** what the sandbox's own storage opens (PostgreSQL: a different application_name) */
  testUrl: string;
  /** the schema / database name (SQLite: the file path) */
  name: string;
  /** every attempt row, in one query (null: use the storage per job) */
  allAttempts: (() => Promise<AttemptRow[]>) | null;
  /**
   * Kill every server connection of the workers (PostgreSQL: those tagged with our
   * application_name; MySQL: every connection on our database but the admin's own, the
   * sandbox storage's included). Resolves to how many were killed.
   */
  killConnections(): Promise<number>;
  drop(): Promise<void>;
}

const randomName = () => `lh_p_${randomBytes(5).toString('hex')}`;

export async function provisionDb(kind: DbKind, server: string | null, dir: string): Promise<ProvisionedDb> {
  if (kind === 'sqlite') {
    const file = path.join(dir, 'jobs.db');
    return {
      kind,
      url: `sqlite:${file}`,
      testUrl: `sqlite:${file}`,
      name: file,
      allAttempts: null,
      killConnections: () => Promise.reject(new Error('sqlite has no connections to kill')),
      drop: async () => {},
    };
  }
  if (!server) throw new Error(`a ${kind} sandbox needs a server URL (from dbTargets / serverFor)`);
  return kind === 'postgres' ? provisionPostgres(server) : provisionMysql(server);
}

async function provisionPostgres(server: string): Promise<ProvisionedDb> {
  const name = randomName();
  const withApp = (app: string) => {
    const u = new URL(server);
    u.searchParams.set('schema', name);
    u.searchParams.set('application_name', app);
    return u.toString();
  };
  const admin = new pg.Client({ connectionString: server, application_name: `${name}_admin` });
  admin.on('error', () => {});
  await admin.connect();
  // The storage's migrate() creates the schema; created here too so drop() always has one to drop.
  await admin.query(`CREATE SCHEMA IF NOT EXISTS "${name}"`);
  return {
    kind: 'postgres',
    url: withApp(name),
    testUrl: withApp(`${name}_test`),
    name,
    allAttempts: async () => (await admin.query(`SELECT * FROM "${name}".job_attempts ORDER BY job_id, attempt, id`)).rows.map(pgAttemptRow),
    killConnections: async () => {
      const res = await admin.query(
        'SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      return res.rows.filter((r: { killed: boolean }) => r.killed).length;
    },
    drop: async () => {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
      } finally {
        await admin.end().catch(() => {});
      }
    },
  };
}

async function provisionMysql(server: string): Promise<ProvisionedDb> {
  const name = randomName();
  const admin = await mysql.createConnection(server);
  admin.on('error', () => {});
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  const u = new URL(server);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    kind: 'mysql',
    url,
    testUrl: url,
    name,
    allAttempts: async () =>
      (await mysqlRun<Record<string, unknown>[]>(admin, `SELECT * FROM \`${name}\`.leasehold_job_attempts ORDER BY job_id, attempt, id`)).map(mysqlAttemptRow),
    killConnections: async () => {
      const [rows] = await admin.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()', [name]);
      let killed = 0;
      for (const r of rows as { id: number }[]) {
        // a connection that closed meanwhile: "Unknown thread id"
        await admin.query(`KILL CONNECTION ${Number(r.id)}`).then(() => killed++, () => {});
      }
      return killed;
    },
    drop: async () => {
      try {
        await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await admin.end().catch(() => {});
      }
    },
  };
}
