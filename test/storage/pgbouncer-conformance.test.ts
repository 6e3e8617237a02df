/**
 * The shared storage conformance suite once more on PostgreSQL, every statement going through
 * PgBouncer in transaction pooling mode (pgbouncer-support.ts), with `pgbouncer: 'transaction'`:
 * each storage and its `connectAnother` twin are clients of one small server pool.
 */
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { harnessDb } from '../conformance/harness.js';
import { dropPostgresSchema } from '../runtime/support-storages.js';
import { runStorageConformance } from '../conformance/index.js';
import { serverFor } from '../support/databases.js';
import { pgbouncerMissing, startPgbouncer } from './pgbouncer-support.js';
import type { RunningPgbouncer } from './pgbouncer-support.js';

const suite = 'postgres conformance through pgbouncer';
const direct = pgbouncerMissing(suite) === null ? await serverFor('postgres', suite) : null;

if (direct !== null) {
  let bouncer: Promise<RunningPgbouncer> | undefined;
  after(async () => (await bouncer)?.stop());
  runStorageConformance({
    name: 'postgres through pgbouncer (transaction pooling)',
    create: async () => {
      const { url } = await (bouncer ??= startPgbouncer(direct));
      const schema = `lh_t_${randomBytes(6).toString('hex')}`;
      return harnessDb(() => postgresStorage({ connectionString: url, schema, poolSize: 4, pgbouncer: 'transaction' }), () => dropPostgresSchema(schema, direct));
    },
  });
}
