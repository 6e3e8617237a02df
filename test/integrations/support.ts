/**
 * What every ORM adapter's test proves, on PostgreSQL and on MySQL/MariaDB (a missing server
 * skips its kind loudly, or fails under LEASEHOLD_REQUIRE_DBS): inside the library's own
 * transaction, an enqueue commits with the caller's row, rolls back with it (no job, no attempt,
 * no effect, its idempotency key free again), and is not claimed by another connection while
 * the transaction is open; bad input throws before anything is sent.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { z } from 'zod';
import type { JobRow, Storage } from '../../src/core/storage.js';
import { JobNotFoundError, ValidationError, createClient, defineJob } from '../../src/index.js';
import { mysqlStorage } from '../../src/storage/mysql/index.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';
import { type ServerKind, serverFor } from '../support/databases.js';

/** Where a library connects: the database server, and the schema (PostgreSQL) or database (MySQL) holding `orders (id)` and the storage's tables. */
export interface Place {
  kind: ServerKind;
  /** a URL of the database that holds the tables (MySQL: the scope's database) */
  url: string;
  scope: string;
}

/** A library opened on a place. */
export interface OrmSession {
  /** `body` inside one of the library's transactions, given the adapter's handle and a way to insert the caller's row; committed unless `body` throws */
  transaction(body: (tx: unknown, insertOrder: (id: number) => Promise<void>) => Promise<void>): Promise<void>;
  /** the adapter called on the library's object outside any transaction (must throw) */
  adaptOutside(): unknown;
  close(): Promise<void>;
}

export interface Library {
  name: string;
  open(place: Place): Promise<OrmSession>;
  /**
   * A handle kept past its transaction: refused with a ValidationError (the library says when
   * its transaction is over), refused by the library itself, or not guarded (Drizzle keeps no
   * such state: the handle, like Drizzle's own `tx`, must not outlive its callback).
   */
  afterEnd: 'validation' | 'library' | 'unguarded';
}

/** A fresh schema or database with the storage's tables and `orders`, two storages on it (the client's, and another connection's), and a way to read `orders`. */
interface World {
  place: Place;
  storage: Storage;
  other: Storage;
  orders(): Promise<number[]>;
  drop(): Promise<void>;
}

async function postgresWorld(url: string): Promise<World> {
  const scope = `lh_orm_${randomBytes(5).toString('hex')}`;
  const open = () => postgresStorage({ connectionString: url, schema: scope, poolSize: 2 });
  const storage = open();
  await storage.migrate();
  const other = open();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE TABLE "${scope}".orders (id int PRIMARY KEY)`);
  return {
    place: { kind: 'postgres', url, scope },
    storage,
    other,
    orders: async () => (await admin.query(`SELECT id FROM "${scope}".orders ORDER BY id`)).rows.map((r: { id: number }) => r.id),
    drop: async () => {
      await Promise.all([storage.close(), other.close()]);
      await admin.query(`DROP SCHEMA IF EXISTS "${scope}" CASCADE`).finally(() => admin.end());
    },
  };
}

async function mysqlWorld(url: string): Promise<World> {
  const scope = `lh_orm_${randomBytes(5).toString('hex')}`;
  const admin = await mysql.createConnection(url);
  await admin.query(`CREATE DATABASE \`${scope}\` CHARACTER SET utf8mb4`);
  const u = new URL(url);
  u.pathname = `/${scope}`;
  const storage = mysqlStorage({ uri: u.toString(), poolSize: 2 });
  await storage.migrate();
  const other = mysqlStorage({ uri: u.toString(), poolSize: 2 });
  await admin.query(`CREATE TABLE \`${scope}\`.orders (id INT PRIMARY KEY) ENGINE=InnoDB`);
  return {
    place: { kind: 'mysql', url: u.toString(), scope },
    storage,
    other,
    orders: async () => ((await admin.query(`SELECT id FROM \`${scope}\`.orders ORDER BY id`))[0] as { id: number }[]).map((r) => r.id),
    drop: async () => {
      await Promise.all([storage.close(), other.close()]);
      await admin.query(`DROP DATABASE IF EXISTS \`${scope}\``).finally(() => admin.end());
    },
  };
}

const WORLDS: Record<ServerKind, (url: string) => Promise<World>> = { postgres: postgresWorld, mysql: mysqlWorld };

/** Thrown inside a transaction body to roll it back. */
class Rollback extends Error {}

const plain = defineJob({ type: 'orm-plain', handler: () => undefined });
const typed = defineJob({ type: 'orm-typed', schema: z.object({ n: z.number() }), handler: () => undefined });

/** The adapter's suite on each database kind. */
export async function ormSuite(lib: Library): Promise<void> {
  for (const kind of ['postgres', 'mysql'] as const) {
    const url = await serverFor(kind, `integrations ${lib.name} (${kind})`);
    describe(`${lib.name}: enqueue in its transaction (${kind})`, { skip: url === null ? `${kind} server unreachable` : false }, () => {
      let world: World;
      let orm: OrmSession;
      const client = () => createClient({ storage: world.storage, jobs: [plain, typed] });
      const claim = (type: string) => world.other.leases.claim({ workerId: 'other', types: [type], queues: null, limit: 10, leaseMs: 60_000 });
      before(async () => {
        world = await WORLDS[kind](url as string);
        orm = await lib.open(world.place);
      });
      after(async () => {
        await orm?.close();
        await world?.drop();
      });

      it('commit: the jobs land with your row, and another connection claims them', async () => {
        const answered: JobRow[] = [];
        await orm.transaction(async (tx, insertOrder) => {
          await insertOrder(1);
          answered.push(await client().enqueue('orm-plain', { n: 1 }, { tx }));
          answered.push(...await client().enqueueMany([
            { type: 'orm-plain', payload: { n: 2 }, options: { tx } },
            { type: 'orm-typed', payload: { n: 3 }, options: { tx, idempotencyKey: `commit-${kind}` } },
          ]));
        });
        assert.deepEqual(await world.orders(), [1]);
        const ids = answered.map((j) => j.id);
        const stored = await Promise.all(ids.map((id) => client().getJob(id)));
        // the answer read through the caller's connection says what a read through ours says
        assert.deepEqual(answered.map((j) => [j.id, j.runAt.getTime(), j.createdAt.getTime()]), stored.map((j) => [j.id, j.runAt.getTime(), j.createdAt.getTime()]));
        assert.deepEqual(stored.map((j) => [j.type, j.status, j.payload]), [['orm-plain', 'queued', { n: 1 }], ['orm-plain', 'queued', { n: 2 }], ['orm-typed', 'queued', { n: 3 }]]);
        const claimed = [...(await claim('orm-plain')), ...(await claim('orm-typed'))];
        assert.deepEqual(claimed.map((j) => j.id).sort(), [...ids].sort());
      });

      it('rollback: no job, no attempt, no effect, and its idempotency key is free again', async () => {
        let id = '';
        const key = `rollback-${kind}`;
        await assert.rejects(
          orm.transaction(async (tx, insertOrder) => {
            await insertOrder(2);
            id = (await client().enqueue('orm-typed', { n: 1 }, { tx, idempotencyKey: key })).id;
            throw new Rollback();
          }),
          Rollback,
        );
        assert.notEqual(id, '');
        assert.deepEqual(await world.orders(), [1], 'your row rolled back');
        await assert.rejects(client().getJob(id), JobNotFoundError);
        assert.deepEqual(await claim('orm-typed'), []);
        assert.deepEqual(await world.storage.attempts.list({ jobId: id }), []);
        assert.deepEqual(await world.storage.effects.list({ jobId: id, limit: 10 }), []);
        const again = await client().enqueue('orm-typed', { n: 2 }, { idempotencyKey: key });
        assert.equal(again.created, true, 'the key was never held');
        assert.deepEqual((await claim('orm-typed')).map((j) => j.id), [again.id]);
      });

      it('open: another connection neither sees nor claims the job until the commit', async () => {
        let id = '';
        await orm.transaction(async (tx) => {
          id = (await client().enqueue('orm-plain', { n: 4 }, { tx })).id;
          assert.deepEqual(await claim('orm-plain'), [], 'not claimed while the transaction is open');
          assert.equal(await world.other.jobs.get({ id }), null, 'not visible while the transaction is open');
        });
        assert.deepEqual((await claim('orm-plain')).map((j) => j.id), [id]);
      });

      it('open: other due jobs are claimed meanwhile, without waiting for it', async () => {
        const ready = await client().enqueue('orm-plain', { n: 6 });
        let held = '';
        await orm.transaction(async (tx) => {
          held = (await client().enqueue('orm-plain', { n: 7 }, { tx })).id;
          assert.deepEqual((await claim('orm-plain')).map((j) => j.id), [ready.id]);
        });
        assert.deepEqual((await claim('orm-plain')).map((j) => j.id), [held]);
      });

      it('bad input: a ValidationError before any statement is sent, and the transaction goes on', async () => {
        await orm.transaction(async (tx, insertOrder) => {
          await assert.rejects(client().enqueue('orm-typed', { n: 'five' } as never, { tx }), (e: unknown) => e instanceof ValidationError && e.code === 'PAYLOAD_SCHEMA');
          await assert.rejects(client().enqueue('orm-plain', {}, { tx, priority: 1.5 }), ValidationError);
          // on PostgreSQL a statement that failed would have aborted the transaction: this insert and the commit would fail
          await insertOrder(3);
        });
        assert.deepEqual(await world.orders(), [1, 3]);
        assert.deepEqual(await claim('orm-typed'), []);
      });

      it("complete a job in the transaction (what ctx.succeedInTransaction does): it lands with the commit only", async () => {
        const { id } = await client().enqueue('orm-typed', { n: 8 });
        const [job] = await claim('orm-typed');
        assert.equal(job?.id, id);
        const finish = (tx: unknown) => world.storage.leases.finish({ items: [{ id, leaseToken: job?.leaseToken as string, status: 'succeeded', attempt: { outcome: 'succeeded' } }], tx });
        await assert.rejects(orm.transaction(async (tx) => {
          assert.deepEqual(await finish(tx), [{ id, applied: true }]);
          throw new Rollback();
        }), Rollback);
        assert.equal((await client().getJob(id)).status, 'running');
        await orm.transaction(async (tx) => void (await finish(tx)));
        assert.equal((await client().getJob(id)).status, 'succeeded');
        assert.deepEqual((await world.storage.attempts.list({ jobId: id })).map((a) => a.outcome), ['succeeded']);
      });

      it('refuses what is not an open transaction', async () => {
        assert.throws(() => orm.adaptOutside(), ValidationError);
        if (lib.afterEnd === 'unguarded') return;
        let kept: unknown;
        await orm.transaction(async (tx) => {
          kept = tx;
        });
        await assert.rejects(client().enqueue('orm-plain', { n: 5 }, { tx: kept }), lib.afterEnd === 'validation' ? ValidationError : Error);
        assert.deepEqual(await claim('orm-plain'), []);
      });
    });
  }
}
