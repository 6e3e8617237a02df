/**
 * A private database per lock test (test/process/locks.test.ts): a SQLite file in a temp dir,
 * a PostgreSQL schema or a MariaDB/MySQL database with a random name, migrated, and dropped
 * again by `drop()`. Server kinds go through serverFor (a missing server skips loudly, or
 * fails when LEASEHOLD_REQUIRE_DBS requires it).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Storage } from '../../src/core/storage.js';
import { openStorage } from '../../src/storage/open.js';
import { serverFor } from '../support/databases.js';

export type LockDbKind = 'sqlite' | 'postgres' | 'mysql';

export interface LockDb {
  url: string;
  dir: string;
  storage: Storage;
  drop(): Promise<void>;
}

/** null: the server is unreachable and not required (already reported by serverFor). */
export async function lockDb(kind: LockDbKind, suite: string): Promise<LockDb | null> {
  const dir = mkdtempSync(path.join(tmpdir(), 'lh-locks-'));
  const name = `lh_lk_${randomBytes(5).toString('hex')}`;
  let url: string;
  let dropServer = async () => {};
  if (kind === 'sqlite') {
    url = `sqlite:${path.join(dir, 'db.sqlite')}`;
  } else {
    const server = await serverFor(kind, `${suite} (${kind})`);
    if (server === null) {
      rmSync(dir, { recursive: true, force: true });
      return null;
    }
    const u = new URL(server);
    if (kind === 'postgres') {
      u.searchParams.set('schema', name);
      dropServer = async () => {
        const admin = new pg.Client({ connectionString: server });
        await admin.connect();
        try {
          await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
        } finally {
          await admin.end();
        }
      };
    } else {
      const admin = await mysql.createConnection(server);
      await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
      await admin.end();
      u.pathname = `/${name}`;
      dropServer = async () => {
        const a = await mysql.createConnection(server);
        try {
          await a.query(`DROP DATABASE IF EXISTS \`${name}\``);
        } finally {
          await a.end();
        }
      };
    }
    url = u.toString();
  }
  const storage = await openStorage(url);
  await storage.migrate();
  return {
    url,
    dir,
    storage,
    drop: async () => {
      await storage.close().catch(() => {});
      try {
        await dropServer();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
