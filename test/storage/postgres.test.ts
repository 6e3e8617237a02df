/**
 * The PostgreSQL adapter against the shared conformance suite. Each database is a fresh random
 * schema (so parallel test files never collide), migrated; `connectAnother` is a second
 * PostgresStorage with its own pool on the same schema, as another process would be.
 */
import { randomBytes } from 'node:crypto';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { harnessDb } from '../conformance/harness.js';
import { dropPostgresSchema } from '../runtime/support-storages.js';
import { runStorageConformance } from '../conformance/index.js';
import { serverFor } from '../support/databases.js';

const url = await serverFor('postgres', 'postgres conformance');

if (url !== null) {
  runStorageConformance({
    name: 'postgres',
    create: async () => {
      const schema = `lh_t_${randomBytes(6).toString('hex')}`;
      return harnessDb(() => postgresStorage({ connectionString: url, schema, poolSize: 4 }), () => dropPostgresSchema(schema, url));
    },
  });
}
