/** MySQL 8.0.4+ / MariaDB 10.6+ storage for leasehold (subpath export `leasehold/mysql`). */
export { MysqlStorage, mysqlStorage } from './mysql-storage.js';
export type { MysqlStorageOptions } from './mysql-storage.js';
export { MYSQL_MIGRATIONS, LATEST_MYSQL_VERSION, checkServerVersion, parseServerVersion } from './mysql-migrations.js';
export type { MysqlMigration, MysqlServerInfo } from './mysql-migrations.js';
export { classifyMysqlError } from './mysql-errors.js';
export type { MysqlErrorKind } from './mysql-errors.js';
