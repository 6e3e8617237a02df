/**
 * leasehold/kysely against Kysely on PostgreSQL (pg) and MySQL/MariaDB (mysql2): see support.ts.
 * The Kysely instance carries a CamelCasePlugin, as many do: the adapter must not let it rename
 * the columns the storage reads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CamelCasePlugin, Kysely, MysqlDialect, PostgresDialect } from 'kysely';
import { createPool } from 'mysql2';
import pg from 'pg';
import { ValidationError, createClient } from '../../src/index.js';
import { kyselyTx } from '../../src/integrations/kysely.js';
import { type Queryable, exec, run } from '../../src/storage/mysql/db.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { serverFor } from '../support/databases.js';
import { type Library, ormSuite } from './support.js';

interface Tables {
  orders: { id: number };
}

const lib: Library = {
  name: 'kysely',
  afterEnd: 'library',
  open: async ({ kind, url, scope }) => {
    const dialect = kind === 'postgres'
      ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) })
      // the returned job's times are read through the pool's settings (docs/databases.md)
      : new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 2, timezone: 'Z' }) });
    const db = new Kysely<Tables>({ dialect, plugins: [new CamelCasePlugin()] });
    return {
      transaction: (body) =>
        db.transaction().execute(async (trx) => {
          await body(kyselyTx(trx), async (id) => void (await trx.withSchema(scope).insertInto('orders').values({ id }).execute()));
        }),
      adaptOutside: () => kyselyTx(db as never),
      close: () => db.destroy(),
    };
  },
};

await ormSuite(lib);

// MySQL has no RETURNING: its insert reads the header of a write (MariaDB, tested above, never needs it)
const mysqlUrl = await serverFor('mysql', 'integrations kysely (mysql writes)');
describe('kysely on MySQL: answers as mysql2 does', { skip: mysqlUrl === null ? 'mysql server unreachable' : false }, () => {
  it("a write's header (affected rows, first id) and a read with a list parameter", async () => {
    const db = new Kysely<Tables>({ dialect: new MysqlDialect({ pool: createPool({ uri: mysqlUrl as string, connectionLimit: 1 }) }) });
    try {
      await db.transaction().execute(async (trx) => {
        // what the MySQL storage does with it
        const tx = kyselyTx(trx) as unknown as Queryable;
        await exec(tx, 'CREATE TEMPORARY TABLE lh_seq (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)');
        const head = await exec(tx, 'INSERT INTO lh_seq (v) VALUES (?), (?)', [10, 20]);
        assert.deepEqual([head.affectedRows, String(head.insertId)], [2, '1']);
        const rows = await run<{ id: unknown; v: number }[]>(tx, 'SELECT id, v FROM lh_seq WHERE id IN (?) ORDER BY id', [[1, 2]]);
        assert.deepEqual(rows.map((r) => [String(r.id), r.v]), [['1', 10], ['2', 20]]);
      });
    } finally {
      await db.destroy();
    }
  });

  it('refuses a pool that reads DATETIME away from UTC, before the first statement', async () => {
    const db = new Kysely<Tables>({ dialect: new MysqlDialect({ pool: createPool({ uri: mysqlUrl as string, connectionLimit: 1, timezone: '+05:30' }) }) });
    // never migrated: the first statement would fail on a missing table, the check comes before it
    const storage = mysqlStorage({ uri: mysqlUrl as string, poolSize: 1, tablePrefix: 'lh_never_' });
    try {
      await db.transaction().execute(async (trx) => {
        await assert.rejects(createClient({ storage }).enqueue('x', {}, { tx: kyselyTx(trx) }), (e: unknown) => e instanceof ValidationError && /timezone: 'Z'/.test(e.message));
      });
    } finally {
      await db.destroy();
      await storage.close();
    }
  });
});
