/**
 * Reference limits: a hand-written claim-and-complete loop on each database, with no job
 * library around it (no attempt rows, no tokens, no heartbeats). One row per statement, and
 * 100 rows per statement; c connections (c loops) per process. Enqueue: one multi-row INSERT
 * per call, and a one-row INSERT per job.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { Db, OnJob, Producer, RunningWorker, SystemDef } from '../common.ts';
import { MYSQL_URL, PG_URL, sleep, sqliteDir } from '../common.ts';

const S = 'bench_raw';

// ---------------------------------------------------------------------------- PostgreSQL

const pgSql = {
  drop: `DROP SCHEMA IF EXISTS ${S} CASCADE`,
  create: [
    `CREATE SCHEMA ${S}`,
    `CREATE TABLE ${S}.jobs (id bigserial PRIMARY KEY, status smallint NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
       payload json NOT NULL, locked_at timestamptz)`,
    `CREATE INDEX jobs_due ON ${S}.jobs (run_at, id) WHERE status = 0`,
  ],
  claim1: `UPDATE ${S}.jobs SET status = 1, locked_at = now() WHERE id = (SELECT id FROM ${S}.jobs WHERE status = 0 AND run_at <= now()
    ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload`,
  claimN: `UPDATE ${S}.jobs SET status = 1, locked_at = now() WHERE id = ANY(ARRAY(SELECT id FROM ${S}.jobs WHERE status = 0 AND run_at <= now()
    ORDER BY run_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)) RETURNING id, payload`,
  complete1: `UPDATE ${S}.jobs SET status = 2 WHERE id = $1`,
  completeN: `UPDATE ${S}.jobs SET status = 2 WHERE id = ANY($1::bigint[])`,
};

async function pgRun(sqls: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    for (const s of sqls) await c.query(s);
  } finally {
    await c.end();
  }
}

function loops(concurrency: number, body: (i: number, alive: () => boolean) => Promise<void>): RunningWorker {
  let running = true;
  const all = Array.from({ length: concurrency }, (_, i) => body(i, () => running));
  return {
    async stop() {
      running = false;
      await Promise.all(all);
    },
  };
}

function rawPg(batch: number): SystemDef {
  return {
    id: `raw-pg-${batch}`,
    db: 'postgres',
    label: `raw SQL, ${batch} row${batch > 1 ? 's' : ''}/claim`,
    settings:
      batch === 1
        ? 'c connections; UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING; then UPDATE … WHERE id = $1; named prepared statements; enqueue: INSERT … SELECT unnest($1::json[]) / one-row INSERT'
        : `c connections; UPDATE … WHERE id = ANY(ARRAY(SELECT … FOR UPDATE SKIP LOCKED LIMIT ${batch})) RETURNING; then UPDATE … WHERE id = ANY($1); prepared`,
    kind: 'raw',
    onlyC10: batch === 1,
    timeEnqueue: batch === 1,
    latency: false,
    reset: () => pgRun([pgSql.drop, ...pgSql.create]),
    cleanup: () => pgRun([pgSql.drop]),
    async producer(): Promise<Producer> {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      return {
        enqueueOne: async (p) => void (await c.query({ name: 'ins1', text: `INSERT INTO ${S}.jobs (payload) VALUES ($1)`, values: [JSON.stringify(p)] })),
        enqueueBulk: async (ps) =>
          void (await c.query({ name: 'insN', text: `INSERT INTO ${S}.jobs (payload) SELECT unnest($1::json[])`, values: [ps.map((p) => JSON.stringify(p))] })),
        remaining: async () => Number((await c.query(`SELECT count(*)::int AS n FROM ${S}.jobs WHERE status < 2`)).rows[0].n),
        close: () => c.end(),
      };
    },
    async worker({ concurrency, onJob }) {
      const clients = await Promise.all(
        Array.from({ length: concurrency }, async () => {
          const c = new pg.Client({ connectionString: PG_URL });
          await c.connect();
          return c;
        }),
      );
      return loopsWithClose(concurrency, async (i, alive) => {
        const c = clients[i] as pg.Client;
        while (alive()) {
          const rows =
            batch === 1
              ? (await c.query({ name: 'claim1', text: pgSql.claim1 })).rows
              : (await c.query({ name: 'claimN', text: pgSql.claimN, values: [batch] })).rows;
          if (rows.length === 0) {
            await sleep(5);
            continue;
          }
          for (const r of rows) onJob(r.payload);
          if (batch === 1) await c.query({ name: 'complete1', text: pgSql.complete1, values: [rows[0].id] });
          else await c.query({ name: 'completeN', text: pgSql.completeN, values: [rows.map((r) => r.id)] });
        }
      }, () => Promise.all(clients.map((c) => c.end())));
    },
  };
}

function loopsWithClose(concurrency: number, body: (i: number, alive: () => boolean) => Promise<void>, close: () => Promise<unknown>): RunningWorker {
  const l = loops(concurrency, body);
  return {
    async stop() {
      await l.stop();
      await close();
    },
  };
}

// ---------------------------------------------------------------------------- MySQL / MariaDB

function rawMysql(batch: number): SystemDef {
  const uri = `${MYSQL_URL}/${S}`;
  return {
    id: `raw-mysql-${batch}`,
    db: 'mysql',
    label: `raw SQL, ${batch} row${batch > 1 ? 's' : ''}/claim`,
    settings: `c connections, READ COMMITTED; BEGIN; SELECT id … ORDER BY run_at, id LIMIT ${batch} FOR UPDATE SKIP LOCKED; UPDATE status = 1; COMMIT; then UPDATE status = 2 WHERE id IN (…); enqueue: multi-row INSERT / one-row INSERT`,
    kind: 'raw',
    onlyC10: batch === 1,
    timeEnqueue: batch === 1,
    latency: false,
    async reset() {
      const c = await mysql.createConnection({ uri: MYSQL_URL });
      await c.query(`DROP DATABASE IF EXISTS ${S}`);
      await c.query(`CREATE DATABASE ${S}`);
      await c.query(`CREATE TABLE ${S}.jobs (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, status TINYINT NOT NULL DEFAULT 0,
        run_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), payload LONGTEXT NOT NULL, KEY jobs_due (status, run_at, id)) ENGINE=InnoDB`);
      await c.end();
    },
    async cleanup() {
      const c = await mysql.createConnection({ uri: MYSQL_URL });
      await c.query(`DROP DATABASE IF EXISTS ${S}`);
      await c.end();
    },
    async producer(): Promise<Producer> {
      const c = await mysql.createConnection({ uri });
      return {
        enqueueOne: async (p) => void (await c.execute('INSERT INTO jobs (payload) VALUES (?)', [JSON.stringify(p)])),
        enqueueBulk: async (ps) => void (await c.query('INSERT INTO jobs (payload) VALUES ?', [ps.map((p) => [JSON.stringify(p)])])),
        remaining: async () => Number(((await c.query('SELECT count(*) AS n FROM jobs WHERE status < 2'))[0] as { n: number }[])[0]?.n),
        close: () => c.end(),
      };
    },
    async worker({ concurrency, onJob }) {
      const conns = await Promise.all(
        Array.from({ length: concurrency }, async () => {
          const c = await mysql.createConnection({ uri });
          await c.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
          return c;
        }),
      );
      return loopsWithClose(concurrency, async (i, alive) => {
        const c = conns[i] as mysql.Connection;
        while (alive()) {
          await c.query('BEGIN');
          const [rows] = (await c.execute(`SELECT id, payload FROM jobs WHERE status = 0 AND run_at <= NOW(6) ORDER BY run_at, id LIMIT ${batch} FOR UPDATE SKIP LOCKED`)) as unknown as [
            { id: number; payload: string }[],
          ];
          if (rows.length === 0) {
            await c.query('COMMIT');
            await sleep(5);
            continue;
          }
          const ids = rows.map((r) => r.id);
          await c.query('UPDATE jobs SET status = 1 WHERE id IN (?)', [ids]);
          await c.query('COMMIT');
          for (const r of rows) onJob(JSON.parse(r.payload));
          await c.query('UPDATE jobs SET status = 2 WHERE id IN (?)', [ids]);
        }
      }, () => Promise.all(conns.map((c) => c.end())));
    },
  };
}

// ---------------------------------------------------------------------------- SQLite

function rawSqlite(batch: number): SystemDef {
  const file = () => join(sqliteDir(), 'raw.db');
  const open = () => {
    const d = new Database(file(), { timeout: 5000 });
    d.pragma('journal_mode = WAL');
    d.pragma('synchronous = NORMAL');
    return d;
  };
  const rm = () => {
    for (const f of [file(), `${file()}-wal`, `${file()}-shm`]) rmSync(f, { force: true });
  };
  return {
    id: `raw-sqlite-${batch}`,
    db: 'sqlite',
    label: `raw SQL, ${batch} row${batch > 1 ? 's' : ''}/claim`,
    settings: `better-sqlite3, WAL, synchronous=NORMAL, busy_timeout 5 s; one connection per process (the API is synchronous, so c loops would serialize anyway); BEGIN IMMEDIATE; UPDATE … WHERE id IN (SELECT … LIMIT ${batch}) RETURNING; COMMIT; then UPDATE status = 2; enqueue: prepared INSERT in one transaction / one INSERT per job`,
    kind: 'raw',
    onlyC10: batch === 1,
    timeEnqueue: batch === 1,
    latency: false,
    async reset() {
      rm();
      const d = open();
      d.exec(`CREATE TABLE jobs (id INTEGER PRIMARY KEY, status INTEGER NOT NULL DEFAULT 0, run_at INTEGER NOT NULL, payload TEXT NOT NULL);
        CREATE INDEX jobs_due ON jobs (run_at, id) WHERE status = 0;`);
      d.close();
    },
    cleanup: async () => rm(),
    async producer(): Promise<Producer> {
      const d = open();
      const ins = d.prepare('INSERT INTO jobs (run_at, payload) VALUES (?, ?)');
      const many = d.transaction((ps: object[]) => {
        const now = Date.now();
        for (const p of ps) ins.run(now, JSON.stringify(p));
      });
      return {
        enqueueOne: async (p) => void ins.run(Date.now(), JSON.stringify(p)),
        enqueueBulk: async (ps) => void many(ps),
        remaining: async () => (d.prepare('SELECT count(*) AS n FROM jobs WHERE status < 2').get() as { n: number }).n,
        close: async () => void d.close(),
      };
    },
    async worker({ onJob }: { concurrency: number; onJob: OnJob }) {
      const d = open();
      const claim = d.prepare(`UPDATE jobs SET status = 1 WHERE id IN (SELECT id FROM jobs WHERE status = 0 AND run_at <= ? ORDER BY run_at, id LIMIT ${batch}) RETURNING id, payload`);
      const complete = d.prepare('UPDATE jobs SET status = 2 WHERE id IN (SELECT value FROM json_each(?))');
      const claimTx = d.transaction(() => claim.all(Date.now()) as { id: number; payload: string }[]);
      return loopsWithClose(1, async (_i, alive) => {
        while (alive()) {
          const rows = claimTx.immediate();
          if (rows.length === 0) {
            await sleep(5);
            continue;
          }
          for (const r of rows) onJob(JSON.parse(r.payload));
          complete.run(JSON.stringify(rows.map((r) => r.id)));
          await new Promise((r) => setImmediate(r));
        }
      }, async () => void d.close());
    },
  };
}

export const rawSystems: SystemDef[] = [rawPg(1), rawPg(100), rawSqlite(1), rawSqlite(100), rawMysql(1), rawMysql(100)];

export type { Db };
