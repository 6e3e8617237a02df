/**
 * A connection of the adapter's own pool left idle inside a transaction (its process frozen
 * mid-transaction) is ended by the server, so the row locks it held are released and a rescue
 * can proceed; without the limit the other writer waits for ever. PostgreSQL and MariaDB.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import type pg from 'pg';
import { job } from './sqlite-support.js';
import { serverFor } from '../support/databases.js';
import { postgresFixtures } from './postgres-support.js';
import { throwawayDatabase } from './mysql-support.js';
import { postgresStorage } from '../../src/storage/postgres/index.js';

const pgUrl = await serverFor('postgres', 'idle transactions (postgres)');
const myUrl = await serverFor('mysql', 'idle transactions (mysql)');

describe('postgres: an idle transaction of our pool is ended', { skip: pgUrl === null }, () => {
  const { made, schemas, client } = postgresFixtures(pgUrl);

  it('its row lock is released; another writer gets the row', async () => {
    const schema = `lh_t_idle_${Date.now().toString(36)}`;
    schemas.push(schema);
    const s = postgresStorage({ connectionString: pgUrl as string, schema, poolSize: 2, idleTransactionTimeoutMs: 1_000 });
    made.push(s);
    await s.migrate();
    const [ins] = await s.jobs.insert({ jobs: [job('idle')] });
    const frozen = await (s as unknown as { pool: pg.Pool }).pool.connect();
    frozen.on('error', () => {});
    try {
      await frozen.query('BEGIN');
      await frozen.query(`SELECT id FROM "${schema}".jobs WHERE id = $1 FOR UPDATE`, [ins?.job.id]);
      const other = await client();
      await other.query(`SET lock_timeout = '8s'`);
      const r = await other.query(`UPDATE "${schema}".jobs SET priority = 1 WHERE id = $1`, [ins?.job.id]);
      assert.equal(r.rowCount, 1);
      await assert.rejects(frozen.query('SELECT 1'));
    } finally {
      frozen.release(true);
    }
  });
});

describe('mariadb: an idle transaction of our pool is ended', { skip: myUrl === null }, () => {
  const { db, dbUrl, make } = throwawayDatabase(myUrl);

  it('its row lock is released; another writer gets the row', async () => {
    const s = make({ idleTransactionTimeoutMs: 1_000 });
    await s.migrate();
    const [ins] = await s.jobs.insert({ jobs: [job('idle')] });
    const version = await mysqlVersion(dbUrl(db));
    if (!/mariadb/i.test(version)) return; // MySQL has no idle-transaction limit
    const frozen = await (s as unknown as { ownPool: mysql.Pool }).ownPool.getConnection();
    await frozen.query('BEGIN');
    await frozen.query('SELECT id FROM leasehold_jobs WHERE id = ? FOR UPDATE', [ins?.job.id]);
    const other = await mysql.createConnection(dbUrl(db));
    try {
      await other.query('SET SESSION innodb_lock_wait_timeout = 8');
      const [r] = await other.query('UPDATE leasehold_jobs SET priority = 1 WHERE id = ?', [ins?.job.id]);
      assert.equal((r as { affectedRows: number }).affectedRows, 1);
      await assert.rejects(frozen.query('SELECT 1'));
    } finally {
      frozen.destroy();
      await other.end();
    }
  });
});

async function mysqlVersion(url: string): Promise<string> {
  const c = await mysql.createConnection(url);
  try {
    const [rows] = await c.query('SELECT VERSION() AS v');
    return (rows as { v: string }[])[0]?.v ?? '';
  } finally {
    await c.end();
  }
}
