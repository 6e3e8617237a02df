/**
 * Shared by the mysql-*.test.ts suites: a job to enqueue, and each suite's throwaway
 * database, created before its tests and dropped after them with the storages and pools
 * they made.
 */
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import mysql from 'mysql2/promise';
import type { NewJob } from '../../src/core/storage.js';
import { MysqlStorage, mysqlStorage } from '../../src/storage/mysql/index.js';

export function job(type: string, over: Partial<NewJob> = {}): NewJob {
  return { queue: 'default', type, payload: { a: 1 }, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000, ...over };
}

/**
 * Call inside a describe: registers the before() that creates the database `db` (through
 * an admin connection to `url`) and the after() that closes what `make` made and the pools
 * pushed to `pools`, drops the database and ends the admin connection.
 */
export function throwawayDatabase(url: string | null) {
  const dbUrl = (db: string): string => {
    const u = new URL(url as string);
    u.pathname = `/${db}`;
    return u.toString();
  };

  const db = `lh_t_${randomBytes(6).toString('hex')}`;
  let admin: mysql.Connection;
  const owned: MysqlStorage[] = [];
  const pools: mysql.Pool[] = [];
  const make = (opts: { pool?: mysql.Pool; tablePrefix?: string; poolSize?: number; idleTransactionTimeoutMs?: number } = {}): MysqlStorage => {
    const s = mysqlStorage(opts.pool ? opts : { uri: dbUrl(db), ...opts });
    owned.push(s);
    return s;
  };

  before(async () => {
    admin = await mysql.createConnection(url as string);
    await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
  });
  after(async () => {
    for (const s of owned) await s.close();
    for (const p of pools) await p.end();
    await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
    await admin.end();
  });

  /** The admin connection, once the before() hook has opened it. */
  const adminConnection = (): mysql.Connection => admin;
  return { db, dbUrl, make, pools, adminConnection };
}
