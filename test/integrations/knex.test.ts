/** leasehold/knex against Knex on PostgreSQL (pg) and MySQL/MariaDB (mysql2): see support.ts. */
import knex from 'knex';
import { knexTx } from '../../src/integrations/knex.js';
import { type Library, ormSuite } from './support.js';

const lib: Library = {
  name: 'knex',
  afterEnd: 'validation',
  open: async ({ kind, url, scope }) => {
    const db = knex({ client: kind === 'postgres' ? 'pg' : 'mysql2', connection: url, pool: { min: 0, max: 2 } });
    return {
      transaction: (body) =>
        db.transaction(async (trx) => {
          await body(knexTx(trx), async (id) => void (await trx.withSchema(scope).insert({ id }).into('orders')));
        }),
      adaptOutside: () => knexTx(db as never),
      close: () => db.destroy(),
    };
  },
};

await ormSuite(lib);
