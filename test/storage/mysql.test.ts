/**
 * The MySQL/MariaDB adapter against the shared conformance suite. Each database is a fresh
 * random one (so parallel test files never collide), migrated; `connectAnother` is a second
 * MysqlStorage with its own pool on the same database, as another process would be.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { harnessDb } from '../conformance/harness.js';
import { runStorageConformance } from '../conformance/index.js';
import { serverFor } from '../support/databases.js';

const url = await serverFor('mysql', 'mysql conformance');

/** The server URL pointed at another database. */
function withDatabase(base: string, db: string): string {
  const u = new URL(base);
  u.pathname = `/${db}`;
  return u.toString();
}

if (url !== null) {
  runStorageConformance({
    name: 'mysql',
    create: async () => {
      const db = `lh_t_${randomBytes(6).toString('hex')}`;
      const admin = await mysql.createConnection(url);
      try {
        await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
      } finally {
        await admin.end();
      }
      const uri = withDatabase(url, db);
      return harnessDb(
        () => mysqlStorage({ uri, poolSize: 4 }),
        async () => {
          const c = await mysql.createConnection(url);
          try {
            await c.query(`DROP DATABASE IF EXISTS \`${db}\``);
          } finally {
            await c.end();
          }
        },
      );
    },
  });
}
