/**
 * What only the PostgreSQL adapter has to prove about flow control and unique keys: a limited
 * claim waits for the transaction holding its type's flow row and then counts what that one
 * started; buckets are rows named by bucketName; resume wakes listening workers; a unique key
 * inserted inside the caller's transaction holds (concurrent inserts wait for it) until that
 * transaction ends.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { bucketName } from '../../src/core/flow.js';
import { quoteSchema } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { waitFor } from '../runtime/support.js';
import { job, postgresFixtures } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: flow control and unique keys');

const HOUR = 3_600_000;

/** Resolves once a statement on `schema` waits for a lock (the call under test is blocked). */
async function blocked(c: pg.Client, schema: string, what: string): Promise<void> {
  await waitFor(async () => {
    const { rows } = await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 IN query) > 0`, [schema]);
    return rows[0]?.n > 0;
  }, 10_000, what);
}

describe('postgres specific: flow control and unique keys', { skip: url === null }, () => {
  const { fresh, client } = postgresFixtures(url);

  it("a limited claim waits while another transaction holds the type's flow row, then counts the jobs it started", async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const flow = { capped: { maxRunning: 2 } };
    await s.jobs.insert({ jobs: Array.from({ length: 5 }, () => job('capped')) });
    const c = await client();
    // the type's row, as its first limited claim makes it; then another claimer, mid-transaction, holding it and having started two jobs
    await c.query(`INSERT INTO ${q}.flow_buckets (name) VALUES ('capped')`);
    await c.query('BEGIN');
    try {
      assert.equal((await c.query(`SELECT name FROM ${q}.flow_buckets WHERE name = 'capped' FOR UPDATE`)).rowCount, 1);
      await c.query(`UPDATE ${q}.jobs SET status = 'running', lease_token = 'x' || id, locked_until = now() + interval '1 minute'
        WHERE id IN (SELECT id FROM ${q}.jobs WHERE type = 'capped' ORDER BY id DESC LIMIT 2)`);
      const claiming = s.leases.claim({ workerId: 'w2', types: ['capped'], queues: null, limit: 5, leaseMs: 30_000, flow });
      await blocked(await client(), s.schema, 'the limited claim waiting for the flow row');
      await c.query('COMMIT');
      assert.deepEqual(await claiming, [], 'the cap is reached by the jobs the other transaction started');
    } finally {
      // a failed assertion must not leave the transaction holding locks the schema's teardown waits for
      await c.query('ROLLBACK').catch(() => {});
    }
    const { rows } = await c.query(`SELECT count(*)::int AS n FROM ${q}.jobs WHERE type = 'capped' AND status = 'running'`);
    assert.equal(rows[0]?.n, 2);
  });

  it('buckets are rows named by bucketName; the type row of a per-key rate holds no tokens', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const perKey = { limit: 3, periodMs: HOUR, perKey: true };
    const typeWide = { limit: 4, periodMs: HOUR };
    await s.jobs.insert({ jobs: [...['a', 'a', 'b'].map((k) => job('pk', { concurrencyKey: k })), ...Array.from({ length: 6 }, () => job('tw'))] });
    const got = await s.leases.claim({ workerId: 'w', types: ['pk', 'tw'], queues: null, limit: 20, leaseMs: 30_000, flow: { pk: { rate: perKey }, tw: { rate: typeWide } } });
    assert.equal(got.length, 3 + 4);
    const { rows } = await s.pool.query(`SELECT name, tokens FROM ${q}.flow_buckets ORDER BY name`);
    assert.deepEqual(
      rows.map((r) => [r.name, r.tokens === null ? null : Math.floor(r.tokens)]),
      [['pk', null], [bucketName('pk', 'a', perKey), 1], [bucketName('pk', 'b', perKey), 2], ['tw', 0]],
    );
  });

  it('resume wakes listening workers', async () => {
    const s = fresh();
    await s.migrate();
    const other = fresh(s.schema);
    await other.queues.pause({ queue: 'held' });
    let wakes = 0;
    const unsubscribe = await s.subscribe({ onWake: () => (wakes += 1) });
    try {
      const state = await other.queues.resume({ queue: 'held' });
      assert.deepEqual([state.queue, state.paused, state.pausedAt instanceof Date], ['held', false, true]);
      await waitFor(() => wakes > 0, 10_000, 'a wake-up after resume');
    } finally {
      await unsubscribe();
    }
  });

  for (const end of ['COMMIT', 'ROLLBACK'] as const) {
    it(`a unique key inserted in the caller's transaction holds until it ends (${end}): a concurrent insert waits, then answers from what it left`, async () => {
      const s = fresh();
      await s.migrate();
      const other = fresh(s.schema);
      const c = await client();
      await c.query('BEGIN');
      let mine;
      let theirs;
      try {
        [mine] = await s.jobs.insert({ jobs: [job('u', { unique: { key: 'k', mode: 'active' } })], tx: c });
        assert.equal(mine?.outcome, 'created');
        theirs = other.jobs.insert({ jobs: [job('u', { unique: { key: 'k', mode: 'active' } })] });
        await blocked(await client(), s.schema, 'the concurrent insert waiting for the key');
        await c.query(end);
      } finally {
        await c.query('ROLLBACK').catch(() => {});
      }
      const [r] = await theirs;
      if (end === 'COMMIT') assert.deepEqual([r?.outcome, r?.job.id], ['existing', mine?.job.id]);
      else assert.equal(r?.outcome, 'created');
      assert.equal((await s.jobs.list({ type: 'u', limit: 10 })).length, 1);
    });
  }
});
