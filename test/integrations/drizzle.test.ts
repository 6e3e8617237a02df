/** leasehold/drizzle against Drizzle's node-postgres and mysql2 drivers: see support.ts. */
import { drizzle as drizzleMysql } from 'drizzle-orm/mysql2';
import { int, mysqlTable } from 'drizzle-orm/mysql-core';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { integer, pgSchema } from 'drizzle-orm/pg-core';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { drizzleTx } from '../../src/integrations/drizzle.js';
import { type Library, type OrmSession, ormSuite } from './support.js';

const lib: Library = {
  name: 'drizzle',
  afterEnd: 'unguarded',
  open: async ({ kind, url, scope }): Promise<OrmSession> => {
    if (kind === 'postgres') {
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      const db = drizzlePg(pool);
      const orders = pgSchema(scope).table('orders', { id: integer('id').primaryKey() });
      return {
        transaction: (body) => db.transaction(async (tx) => body(drizzleTx(tx), async (id) => void (await tx.insert(orders).values({ id })))),
        adaptOutside: () => drizzleTx(db as never),
        close: () => pool.end(),
      };
    }
    const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
    const db = drizzleMysql(pool);
    const orders = mysqlTable('orders', { id: int('id').primaryKey() });
    return {
      transaction: (body) => db.transaction(async (tx) => body(drizzleTx(tx), async (id) => void (await tx.insert(orders).values({ id })))),
      adaptOutside: () => drizzleTx(db as never),
      close: () => pool.end(),
    };
  },
};

await ormSuite(lib);
