/**
 * The storages the lease-edge tests run on: memory and SQLite through the shared harness, and
 * PostgreSQL (a fresh schema) and MySQL/MariaDB (a fresh table prefix) opened here, each
 * dropped again when its harness closes. A server that is unreachable skips its suite loudly
 * (LEASEHOLD_REQUIRE_DBS makes it a failure).
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { after, before, describe } from 'node:test';
import type { EffectParams, EffectReservation, Storage } from '../../src/core/storage.js';
import { Client } from '../../src/runtime/client.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { TEST_URLS, serverFor, type ServerKind } from '../support/databases.js';
import { Harness } from './support.js';

export type EdgeKind = 'memory' | 'sqlite' | ServerKind;

/** Options for the describe() of `kind`: a server that is unreachable skips it. */
export async function edgeSkip(kind: EdgeKind, suite: string): Promise<string | false> {
  if (kind === 'memory' || kind === 'sqlite') return false;
  return (await serverFor(kind, suite)) === null ? `${kind} server unreachable` : false;
}

/** A harness on a fresh, migrated database of `kind`; `close()` also drops what was created. */
export async function openEdge(kind: EdgeKind): Promise<{ h: Harness; close: () => Promise<void> }> {
  if (kind === 'memory' || kind === 'sqlite') {
    const h = await Harness.open(kind);
    return { h, close: () => h.close() };
  }
  const made: Storage[] = [];
  let drop: () => Promise<void>;
  let make: () => Storage;
  if (kind === 'postgres') {
    const schema = `lh_edge_${randomBytes(6).toString('hex')}`;
    make = () => postgresStorage({ connectionString: TEST_URLS.postgres, schema, poolSize: 4 });
    drop = () => onPostgres(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } else {
    const tablePrefix = `lh_edge_${randomBytes(5).toString('hex')}_`;
    make = () => mysqlStorage({ uri: TEST_URLS.mysql, tablePrefix, poolSize: 4 });
    drop = () => dropMysqlPrefix(tablePrefix);
  }
  const storage = make();
  made.push(storage);
  await storage.migrate();
  const h = new Harness();
  h.storage = storage;
  h.client = new Client({ storage });
  return {
    h,
    close: async () => {
      await h.close();
      for (const s of made) await s.close();
      await drop();
    },
  };
}

async function onPostgres(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: TEST_URLS.postgres });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function dropMysqlPrefix(prefix: string): Promise<void> {
  const c = await mysql.createConnection(TEST_URLS.mysql);
  try {
    // the tables under this prefix (LIKE's _ escaped); they reference each other, so all at once
    const [rows] = await c.query('SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?', [`${prefix.replace(/_/g, '\\_')}%`]);
    const tables = (rows as { t: string }[]).map((r) => `\`${r.t}\``);
    await c.query('SET FOREIGN_KEY_CHECKS = 0');
    if (tables.length > 0) await c.query(`DROP TABLE IF EXISTS ${tables.join(', ')}`);
  } finally {
    await c.end();
  }
}

/** A describe() per storage kind, each on its own fresh database; `h()` is the suite's harness once before() ran. */
export async function describeEachEdge(title: string, body: (h: () => Harness, kind: EdgeKind) => void): Promise<void> {
  for (const kind of ['memory', 'sqlite', 'postgres', 'mysql'] as EdgeKind[]) {
    const suite = `${title} (${kind})`;
    const skip = await edgeSkip(kind, suite);
    describe(suite, { skip }, () => {
      let harness: Harness | undefined;
      let close: () => Promise<void> = async () => {};
      before(async () => {
        ({ h: harness, close } = await openEdge(kind));
      });
      after(() => close());
      body(() => harness as Harness, kind);
    });
  }
}

/** `storage` whose first effect reserve (alone or batched) runs `then` once it landed, before it is answered. */
export function onFirstReserve(storage: Storage, then: (p: EffectParams) => Promise<void>): Storage {
  let first = true;
  const hook = async <T>(p: EffectParams, answer: T): Promise<T> => {
    if (first) {
      first = false;
      await then(p);
    }
    return answer;
  };
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop === 'reserveEffect') return async (p: EffectParams) => hook(p, await target.reserveEffect(p));
      if (prop === 'reserveEffects' && target.reserveEffects) {
        return async (ps: EffectParams[]) => hook(ps[0] as EffectParams, await (target.reserveEffects as (x: EffectParams[]) => Promise<EffectReservation[]>).call(target, ps));
      }
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
