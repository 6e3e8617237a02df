/** The SQLite adapter: `import { sqliteStorage } from 'leasehold/sqlite'`. */
export { SqliteStorage, sqliteStorage } from './sqlite-storage.js';
export type { SqliteStorageOptions } from './sqlite-storage.js';
export { SQLITE_LATEST_VERSION, SQLITE_MIGRATIONS } from './sqlite-migrations.js';
export type { SqliteMigration } from './sqlite-migrations.js';
export { SQLITE_DRIVERS } from './sqlite-driver.js';
export type { SqliteDriverName } from './sqlite-driver.js';
