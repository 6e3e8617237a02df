/**
 * The PostgreSQL adapter against the shared conformance suite. Each database is a fresh random
 * schema (so parallel test files never collide), migrated; `connectAnother` is a second
 * PostgresStorage with its own pool on the same schema, as another process would be.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Storage } from '../../src/core/storage.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { runStorageConformance } from '../conformance/index.js';
import { serverFor } from '../support/databases.js';

const url = await serverFor('postgres', 'postgres conformance');

if (url !== null) {
  runStorageConformance({
    name: 'postgres',
    create: async () => {
      const schema = `lh_t_${randomBytes(6).toString('hex')}`;
      const storage = postgresStorage({ connectionString: url, schema, poolSize: 4 });
      await storage.migrate();
      const others: Storage[] = [];
      return {
        storage,
        connectAnother: async () => {
          const s = postgresStorage({ connectionString: url, schema, poolSize: 4 });
          others.push(s);
          return s;
        },
        cleanup: async () => {
          for (const s of others) await s.close();
          await storage.close();
          const admin = new pg.Client({ connectionString: url });
          await admin.connect();
          try {
            await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          } finally {
            await admin.end();
          }
        },
      };
    },
  });
}
