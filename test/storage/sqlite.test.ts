/**
 * The SQLite adapter (better-sqlite3) against the shared conformance suite. Each database is a
 * fresh file in a temp directory; `connectAnother` opens a second SqliteStorage on the same file.
 */
import { runStorageConformance } from '../conformance/index.js';
import { sqliteConformance } from './sqlite-support.js';

runStorageConformance(sqliteConformance('sqlite'));
