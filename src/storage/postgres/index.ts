/** leasehold/postgres: the PostgreSQL storage adapter. */
export { NOTIFY_CHANNEL, PostgresStorage, postgresStorage } from './postgres-storage.js';
export { quoteSchema } from './postgres-rows.js';
export type { PostgresStorageOptions } from './postgres-storage.js';
export { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from './postgres-migrations.js';
export type { PostgresMigration } from './postgres-migrations.js';
export { classifyPgError, isTransientPgError } from './postgres-errors.js';
export { PgListener } from './postgres-listener.js';
