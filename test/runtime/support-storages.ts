/**
 * The runtime tests' databases: a fresh, migrated one of each kind — memory, SQLite in a temp
 * file, PostgreSQL on a fresh schema, MySQL/MariaDB under a fresh table prefix — dropped again
 * at cleanup, and the describe() that runs a suite once per kind.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Storage } from '../../src/core/storage.js';
import { memoryStorage } from '../../src/storage/memory/index.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import type { ServerKind } from '../support/databases.js';
import { TEST_URLS, serverFor } from '../support/databases.js';

export type StorageKind = 'memory' | 'sqlite' | ServerKind;
/** Every storage the runtime runs on; a server kind needs `kindOptions` on its describe(). */
export const STORAGE_KINDS: readonly StorageKind[] = ['memory', 'sqlite', 'postgres', 'mysql'];
/** The storages that can open a second, separate connection to the same database. */
export const SHARED_KINDS: readonly StorageKind[] = ['sqlite', 'postgres', 'mysql'];

/**
 * Options for the describe() of a `kind` suite: a server kind whose server is unreachable is
 * skipped and reported (or, under LEASEHOLD_REQUIRE_DBS, fails the file).
 */
export async function kindOptions(kind: StorageKind, suite: string): Promise<{ skip: string | false }> {
  if (kind === 'memory' || kind === 'sqlite') return { skip: false };
  return { skip: (await serverFor(kind, suite)) === null ? `${kind} server unreachable` : false };
}

/**
 * `describe(title)` holding one suite per kind, `title (kind)`, run side by side: their tests
 * wait on timers and databases, not on the CPU. A kind is skipped as `kindOptions` says.
 */
export async function describeEachKind(title: string, kinds: readonly StorageKind[], body: (kind: StorageKind) => void): Promise<void> {
  const options = await Promise.all(kinds.map((kind) => kindOptions(kind, `${title} (${kind})`)));
  describe(title, { concurrency: kinds.length }, () => {
    // a kind's own tests share its database: one at a time
    kinds.forEach((kind, i) => describe(`${title} (${kind})`, { ...options[i], concurrency: 1 }, () => body(kind)));
  });
}

export interface TestStorage {
  storage: Storage;
  /** another Storage on the same database (its own connection, as another process has); memory: the same instance */
  another(): Promise<Storage>;
  /** closes every storage handed out and drops what was created */
  cleanup(): Promise<void>;
}

/** A fresh, migrated database of `kind`; server kinds use a pool of `poolSize` connections. */
export async function openTestStorage(kind: StorageKind, opts: { poolSize?: number } = {}): Promise<TestStorage> {
  const opened = await openRaw(kind, opts.poolSize ?? 4);
  let closed = false;
  // one guarded object per storage: memory's `another()` stays the very same storage
  const guarded = new WeakMap<Storage, Storage>();
  const guard = (s: Storage): Storage => {
    if (!guarded.has(s)) guarded.set(s, quietOnceClosed(s, () => closed, kind));
    return guarded.get(s) as Storage;
  };
  const storage = guard(opened.storage);
  return {
    storage,
    another: async () => guard(await opened.another()),
    cleanup: () => {
      closed = true;
      return opened.cleanup();
    },
  };
}

/**
 * `storage`, whose calls once the test's database is closed never answer, with a warning: a
 * loop that outlives its stop() then waits on them instead of holding the test process open.
 */
function quietOnceClosed(storage: Storage, closed: () => boolean, kind: StorageKind): Storage {
  const quiet = <T extends object>(obj: T, path: string): T =>
    new Proxy(obj, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        const name = `${path}${String(prop)}`;
        if (typeof v === 'object' && v !== null && path === '') return quiet(v, `${name}.`);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (!closed()) return (v as (...a: unknown[]) => unknown).apply(target, args);
          if (name !== 'close') process.stderr.write(`!!! ${kind} storage: ${name}() called after the test closed its database\n`);
          return name === 'close' ? Promise.resolve() : new Promise(() => {});
        };
      },
    });
  return quiet(storage, '');
}

async function openRaw(kind: StorageKind, poolSize: number): Promise<TestStorage> {
  const others: Storage[] = [];
  const closeAll = async (storage: Storage) => {
    for (const s of others) await s.close();
    await storage.close();
  };
  const open = async (make: () => Storage, drop: () => Promise<void>): Promise<TestStorage> => {
    const storage = make();
    try {
      await storage.migrate();
    } catch (e) {
      await storage.close().finally(drop);
      throw e;
    }
    return {
      storage,
      another: async () => {
        const other = make();
        others.push(other);
        return other;
      },
      cleanup: () => closeAll(storage).finally(drop),
    };
  };
  switch (kind) {
    case 'memory': {
      const storage = memoryStorage();
      await storage.migrate();
      return { storage, another: async () => storage, cleanup: () => storage.close() };
    }
    case 'sqlite': {
      const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-rt-'));
      const file = path.join(dir, 'jobs.db');
      return open(() => sqliteStorage({ path: file }), async () => rmSync(dir, { recursive: true, force: true }));
    }
    case 'postgres': {
      const schema = `lh_rt_${randomBytes(6).toString('hex')}`;
      return open(() => postgresStorage({ connectionString: TEST_URLS.postgres, schema, poolSize }), () => dropPostgresSchema(schema));
    }
    case 'mysql': {
      const tablePrefix = `lh_rt_${randomBytes(5).toString('hex')}_`;
      return open(() => mysqlStorage({ uri: TEST_URLS.mysql, tablePrefix, poolSize }), () => dropMysqlTables(tablePrefix));
    }
  }
}

/** Drop a test's schema and all it holds. */
export async function dropPostgresSchema(schema: string, url: string = TEST_URLS.postgres): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await admin.end();
  }
}

/** Drop a test's tables: those of the database under its prefix. */
export async function dropMysqlTables(prefix: string): Promise<void> {
  const admin = await mysql.createConnection(TEST_URLS.mysql);
  try {
    // the test's tables: this database's tables under its prefix (LIKE's _ escaped)
    const [rows] = await admin.query('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?', [
      `${prefix.replace(/_/g, '\\_')}%`,
    ]);
    const tables = (rows as { t: string }[]).map((r) => `\`${r.t}\``);
    // the tables reference each other; they all go at once
    await admin.query('SET FOREIGN_KEY_CHECKS = 0');
    if (tables.length > 0) await admin.query(`DROP TABLE IF EXISTS ${tables.join(', ')}`);
  } finally {
    await admin.end();
  }
}
