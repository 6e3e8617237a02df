/**
 * CLI tests on every database the CLI runs on: a private, migrated database per suite (a
 * SQLite file, a PostgreSQL schema, a MySQL/MariaDB database, from test/process/support-db.ts),
 * the storage the test reads it with, and what a test does behind the storage's back: move a
 * job's times into the past, drop an index. Also the seed the retention tests share.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { FinishParams, IndexFact, Storage } from '../../src/core/storage.js';
import { openStorage } from '../../src/storage/open.js';
import { type DbKind, type DbTarget, dbTargets, provisionDb } from '../process/support-db.js';
import { cli, type CliResult } from './support.js';

export type { DbKind, DbTarget };
export { dbTargets };

const DAY = 86_400_000;

export interface CliDb {
  kind: DbKind;
  /** what the CLI gets as --db */
  url: string;
  storage: Storage;
  /** run the CLI against this database */
  run(args: string[], env?: Record<string, string>): Promise<CliResult>;
  /** move a time column of these jobs `ms` into the past */
  backdate(column: 'finished_at' | 'locked_until', ids: readonly string[], ms: number): Promise<void>;
  dropIndex(index: IndexFact): Promise<void>;
  close(): Promise<void>;
}

/** A fresh database of `target`'s kind, migrated through the CLI. */
export async function openCliDb(target: DbTarget): Promise<CliDb> {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-cli-db-'));
  const p = await provisionDb(target.kind, target.server, dir);
  const run = (args: string[], env: Record<string, string> = {}) => cli(['--db', p.url, ...args], { env });
  const migrated = await run(['migrate']);
  assert.equal(migrated.code, 0, migrated.stderr);
  const storage = await openStorage(p.testUrl);
  const sql = await rawSql(target.kind, p.testUrl);
  const jobs = target.kind === 'postgres' ? `"${p.name}".jobs` : 'leasehold_jobs';
  return {
    kind: target.kind,
    url: p.url,
    storage,
    run,
    backdate: (column, ids, ms) => {
      if (target.kind === 'sqlite') return sql(`UPDATE ${jobs} SET ${column} = ${column} - ? WHERE id IN (${ids.map(() => '?').join(', ')})`, [ms, ...ids.map(Number)]);
      if (target.kind === 'postgres') return sql(`UPDATE ${jobs} SET ${column} = ${column} - $1 * interval '1 millisecond' WHERE id = ANY($2::bigint[])`, [ms, ids]);
      return sql(`UPDATE ${jobs} SET ${column} = ${column} - INTERVAL ? MICROSECOND WHERE id IN (?)`, [ms * 1000, ids]);
    },
    dropIndex: (i) => {
      if (target.kind === 'sqlite') return sql(`DROP INDEX ${i.name}`);
      if (target.kind === 'postgres') return sql(`DROP INDEX "${p.name}".${i.name}`);
      return sql(`ALTER TABLE ${i.table} DROP INDEX ${i.name}`);
    },
    close: async () => {
      await storage.close();
      await sql.close();
      await p.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type RawSql = ((text: string, params?: unknown[]) => Promise<void>) & { close(): Promise<void> };

async function rawSql(kind: DbKind, url: string): Promise<RawSql> {
  if (kind === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length));
    return Object.assign(async (text: string, params: unknown[] = []) => void db.prepare(text).run(...params), { close: async () => void db.close() });
  }
  if (kind === 'postgres') {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    return Object.assign(async (text: string, params: unknown[] = []) => void (await c.query(text, params)), { close: () => c.end() });
  }
  const c = await mysql.createConnection(url);
  return Object.assign(async (text: string, params: unknown[] = []) => void (await c.query(text, params)), { close: () => c.end() });
}

/** One job of `type`, claimed by a worker that "crashed" or is still running, and finished as `status` unless running. */
export async function jobIn(s: Storage, type: string, status: FinishParams['status'] | 'running' | 'queued', opts: { leaseMs?: number; effectKey?: string } = {}): Promise<{ id: string; leaseToken: string }> {
  const [inserted] = await s.jobs.insert({ jobs: [{ queue: 'default', type, payload: {}, priority: 0, runAfterMs: 0, maxAttempts: 3, idempotencyKey: null, timeoutMs: 60_000, maxRuntimeMs: 600_000 }] });
  if (status === 'queued') return { id: inserted!.job.id, leaseToken: '' };
  const [c] = await s.leases.claim({ workerId: 'test-host:1', types: [type], queues: null, limit: 1, leaseMs: opts.leaseMs ?? 3_600_000 });
  assert.ok(c, `claimed a ${type} job`);
  if (opts.effectKey) {
    assert.deepEqual(await s.effects.reserve({ key: opts.effectKey, jobId: c.id, leaseToken: c.leaseToken }), { state: 'reserved' });
    assert.equal(await s.effects.complete({ key: opts.effectKey, jobId: c.id, leaseToken: c.leaseToken, result: { sent: true } }), true);
  }
  if (status !== 'running') {
    const outcome = status === 'failed' ? 'failed' : status;
    const [r] = await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status, ...(status === 'failed' ? { runAfterMs: 3_600_000 } : {}), attempt: { outcome } as FinishParams['attempt'] }] });
    assert.equal(r?.applied, true);
  }
  return c;
}

/** The effect oldOk recorded: pruning its job must keep it. */
export const SEED_EFFECT = 'seed:oldOk:email';

/** Finished jobs of every age and status, and jobs no prune may touch; ids by name. */
export async function seedRetention(db: CliDb): Promise<Record<string, string>> {
  const s = db.storage;
  const ids: Record<string, string> = {};
  const add = async (name: string, status: Parameters<typeof jobIn>[2], ageMs = 0) => {
    ids[name] = (await jobIn(s, `keep-${name}`, status, name === 'oldOk' ? { effectKey: SEED_EFFECT } : {})).id;
    if (ageMs > 0) await db.backdate('finished_at', [ids[name]!], ageMs);
  };
  await add('oldOk', 'succeeded', 8 * DAY);
  await add('midOk', 'succeeded', 2 * DAY);
  await add('recentOk', 'succeeded');
  await add('oldDead', 'dead', 31 * DAY);
  await add('midDead', 'dead', 10 * DAY);
  await add('oldCancelled', 'cancelled', 31 * DAY);
  await add('queued', 'queued');
  await add('running', 'running');
  await add('failed', 'failed');
  return ids;
}

/** The names among `ids` whose job is gone. */
export async function goneOf(s: Storage, ids: Record<string, string>): Promise<string[]> {
  const gone: string[] = [];
  for (const [name, id] of Object.entries(ids)) if ((await s.jobs.get({ id })) === null) gone.push(name);
  return gone.sort();
}

/** A database with the retention seed for the enclosing describe block, opened before it (handed to `use`) and closed after. */
export function useRetentionDb(target: DbTarget, use: (opened: { db: CliDb; ids: Record<string, string> }) => void): void {
  let db: CliDb | undefined;
  before(async () => {
    db = await openCliDb(target);
    use({ db, ids: await seedRetention(db) });
  });
  after(() => db?.close());
}
