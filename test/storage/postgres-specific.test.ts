/**
 * What only the PostgreSQL adapter has to prove about its claim and finish SQL: the claim and
 * the sweep served by their partial indexes on a realistic table and, through the hot-path
 * functions, on a table without statistics; successes and heartbeats locking in one order;
 * attempt rows of an earlier version closed in place; lease tokens, with the previous
 * version's claim still working; and NUL-safe error text.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { quoteSchema } from '../../src/storage/postgres/index.js';
import { effectsSql } from '../../src/storage/postgres/postgres-sql-effects.js';
import { jobsSql } from '../../src/storage/postgres/postgres-sql-jobs.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres specific: claim and finish');

describe('postgres specific: claim and finish', { skip: url === null }, () => {
  const { fresh, client } = postgresFixtures(url);

  it('the claim is served by the partial due index on a table full of finished rows', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const c = await client();
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, finished_at)
      SELECT 'default', 'bulk', '{}'::jsonb, 'succeeded', 0, now() - interval '1 hour', 3, 60000, 600000, now() - interval '30 minutes'
      FROM generate_series(1, 20000)`);
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms)
      SELECT 'default', 'bulk', '{}'::jsonb, 'queued', 0, now() - interval '1 minute', 3, 60000, 600000
      FROM generate_series(1, 100)`);
    await c.query(`ANALYZE ${q}.jobs`);
    const sql = jobsSql(q);
    const pick = await c.query(`EXPLAIN ${sql.claimPick}`, [['bulk'], null, 10]);
    const pickPlan = pick.rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(pickPlan, /jobs_due_idx/, pickPlan);
    const full = await c.query(`EXPLAIN ${sql.claim}`, ['w', ['bulk'], null, 10, 30_000]);
    const fullPlan = full.rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(fullPlan, /jobs_due_idx/, fullPlan);
    assert.doesNotMatch(fullPlan, /Seq Scan on jobs/, fullPlan);
    const claimed = await s.leases.claim({ workerId: 'w', types: ['bulk'], queues: null, limit: 10, leaseMs: 30_000 });
    assert.equal(claimed.length, 10);
    await c.query(`ANALYZE ${q}.jobs`);
    const sweep = await c.query(`EXPLAIN ${sql.findExpired}`, [100, ['bulk']]);
    const sweepPlan = sweep.rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(sweepPlan, /jobs_running_lease_idx/, sweepPlan);
  });

  it('without planner statistics (a fresh table) the claim and finish functions still plan index scans only', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const c = await client();
    // 20,000 due rows the planner has never analyzed: left alone it sorts all of them per claim
    await s.jobs.insert({ jobs: Array.from({ length: 20_000 }, () => job('fresh')) });
    const plans: string[] = [];
    c.on('notice', (n) => plans.push(n.message ?? ''));
    await c.query("LOAD 'auto_explain'");
    await c.query('SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice');
    const sql = jobsSql(q);
    const claimed = (await c.query(sql.claimCall, ['w', ['fresh'], null, 300, 30_000, 'b1'])).rows as { id: string }[];
    assert.equal(claimed.length, 300);
    // half through the general finish, half through the one for plain successes
    const half = claimed.slice(0, 150);
    const rest = claimed.slice(150);
    const fill = <T>(v: T) => Array.from({ length: half.length }, () => v);
    const general = await c.query(sql.finishCall, [half.map((r) => r.id), half.map((r) => `b1.${r.id}`), fill('succeeded'), fill(null), fill(false), fill(false),
      fill(null), fill(null), fill('succeeded'), fill(null), fill(null), fill(null), fill(null), fill(false), 'leasehold_test_none', 'x']);
    const successes = await c.query(sql.finishSucceededCall, [rest.map((r) => r.id), rest.map((r) => `b1.${r.id}`)]);
    assert.equal(general.rows.length + successes.rows.length, 300, 'every finish landed');
    // the statements inside the functions (plpgsql drops their header comment; the outer calls show only a Function Scan)
    const inner = plans.filter((p) => /picked AS|locked AS|items AS/.test(p)).join('\n----\n');
    assert.equal(plans.filter((p) => /picked AS|locked AS|items AS/.test(p)).length, 3, plans.join('\n----\n'));
    assert.match(inner, /Index Scan using jobs_due_idx/, inner);
    assert.doesNotMatch(inner, /Seq Scan on jobs|Bitmap Heap Scan on jobs|Index Scan using jobs_running_lease_idx/, inner);
    // the claim walks the index in order and stops after its 300: no sort of the 20,000
    assert.doesNotMatch(inner, /Sort Method: quicksort {2}Memory: \d{4,}kB/, inner);
    // with statistics that say the table is nearly all due rows, the cached plan once joined the
    // picked ids to the table by a merge join over the whole primary key
    await c.query(`ANALYZE ${q}.jobs`);
    plans.length = 0;
    const again = (await c.query(sql.claimCall, ['w', ['fresh'], null, 300, 30_000, 'b2'])).rows as { id: string }[];
    assert.equal(again.length, 300);
    const analyzed = plans.filter((p) => /picked AS/.test(p)).join('\n----\n');
    assert.match(analyzed, /Index Scan using jobs_due_idx/, analyzed);
    assert.doesNotMatch(analyzed, /Merge Join|Hash Join|Seq Scan/, analyzed);
    // and the success finish still reaches its rows through the primary key
    plans.length = 0;
    // half through each success finish: reading the worker back, and naming it
    const [byRow, byName] = [again.slice(0, 150), again.slice(150)];
    assert.equal((await c.query(sql.finishSucceededCall, [byRow.map((r) => r.id), byRow.map((r) => `b2.${r.id}`)])).rows.length, 150);
    assert.equal((await c.query(sql.finishSucceededByCall, [byName.map((r) => r.id), byName.map((r) => `b2.${r.id}`), 'w'])).rows.length, 150);
    const finishPlans = plans.filter((p) => /items AS/.test(p));
    assert.equal(finishPlans.length, 2, plans.join('\n----\n'));
    for (const finishPlan of finishPlans) {
      assert.match(finishPlan, /Index Scan using jobs_pkey on jobs j /, finishPlan);
      assert.doesNotMatch(finishPlan, /Merge Join|Hash Join|Seq Scan|jobs_running_lease_idx/, finishPlan);
    }
  });

  it('the effect ledger\'s batch functions look jobs and effects up by primary key, even on small unanalyzed tables', async () => {
    // a plan cached while the tables were this small would scan them whole for every batch
    // later on (a sequential scan of 20 rows is what the planner picks when it may)
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    await s.jobs.insert({ jobs: Array.from({ length: 20 }, () => job('fx')) });
    const claimed = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: 20, leaseMs: 30_000 });
    const c = await client();
    const plans: string[] = [];
    c.on('notice', (n) => plans.push(n.message ?? ''));
    await c.query("LOAD 'auto_explain'");
    await c.query('SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice');
    const fx = effectsSql(q);
    const keys = claimed.map((j) => `fx-${j.id}`);
    const args = [keys, claimed.map((j) => j.id), claimed.map((j) => j.leaseToken)];
    const reserved = (await c.query(fx.reserveEffects, args)).rows;
    assert.equal(reserved.filter((r) => r.held && r.reserved).length, 20);
    assert.equal((await c.query(fx.getEffects, [keys])).rows.length, 20);
    assert.equal((await c.query(fx.completeEffects, [...args, keys.map(() => 'null')])).rows.length, 20);
    const inner = plans.filter((p) => /input AS|locked AS|e\.key = ANY/.test(p));
    assert.equal(inner.length, 3, plans.join('\n----\n'));
    const all = inner.join('\n----\n');
    assert.match(all, /Index Scan using jobs_pkey on jobs/, all);
    assert.match(all, /Index Scan using effects_pkey on effects/, all);
    assert.doesNotMatch(all, /Seq Scan on (jobs|effects)|Bitmap Heap Scan on (jobs|effects)|Scan using jobs_running_lease_idx/, all);
  });

  it('a batch of successes and a heartbeat over the same leases, sent in opposite orders, wait for each other instead of deadlocking', async () => {
    // the success finish takes its row locks in its update, in id order whatever the order sent
    // (heartbeats lock in id order too); in input order these two would lock from opposite ends
    const s = fresh();
    await s.migrate();
    // odd rounds finish through another storage object, which did not make the claims: the
    // finish that reads the worker back; even rounds the one that names it
    const other = fresh(s.schema);
    for (let round = 0; round < 16; round++) {
      await s.jobs.insert({ jobs: Array.from({ length: 200 }, () => job('lock-order')) });
      const claimed = await s.leases.claim({ workerId: 'w', types: ['lock-order'], queues: null, limit: 200, leaseMs: 30_000 });
      assert.equal(claimed.length, 200);
      const [, finished] = await Promise.all([
        s.leases.heartbeat({ leases: claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken })), leaseMs: 30_000 }),
        (round % 2 ? other : s).leases.finish({ items: [...claimed].reverse().map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) }),
      ]);
      assert.equal(finished.filter((r) => r.applied).length, 200, `round ${round}: every success landed`);
    }
  });

  it('a finish or a cancel closes in place an attempt row that an earlier version opened at claim time', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const c = await client();
    const [a, b] = await s.jobs.insert({ jobs: [job('upgrade'), job('upgrade')] });
    // claimed as a worker of that version did: its tokens are md5 hex (no 'base.id')
    const claimed = (await c.query(`SELECT id::text AS id, lease_token AS "leaseToken" FROM ${q}.claim_jobs('old-worker', ARRAY['upgrade'], NULL, 2, 30000)`)).rows as { id: string; leaseToken: string }[];
    assert.equal(claimed.length, 2);
    assert.match(claimed[0]!.leaseToken, /^[0-9a-f]{32}$/);
    // what a version-2 claim wrote: an open row per attempt
    for (const j of claimed) {
      await c.query(`INSERT INTO ${q}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, outcome) VALUES ($1, 1, 'old-worker', $2, now(), 'running')`, [j.id, j.leaseToken]);
    }
    const [first, second] = claimed;
    await s.leases.finish({ items: [{ id: first!.id, leaseToken: first!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
    await s.jobs.cancel({ id: second!.id });
    const byJob = async (id: string) => (await c.query(`SELECT outcome, finished_at FROM ${q}.job_attempts WHERE job_id = $1`, [id])).rows;
    const done = await byJob(first!.id);
    const cancelled = await byJob(second!.id);
    assert.equal(done.length, 1);
    assert.equal(done[0].outcome, 'succeeded');
    assert.ok(done[0].finished_at);
    assert.equal(cancelled.length, 1);
    assert.equal(cancelled[0].outcome, 'cancelled');
    assert.deepEqual(new Set([a!.job.id, b!.job.id]), new Set(claimed.map((j) => j.id)));
  });

  it('lease tokens are a fresh base per claim and the id; the claim of the previous version (md5 tokens) still works', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const c = await client();
    await s.jobs.insert({ jobs: [job('tokens'), job('tokens'), job('tokens')] });
    const [x, y] = await s.leases.claim({ workerId: 'w', types: ['tokens'], queues: null, limit: 2, leaseMs: 30_000 });
    const base = x!.leaseToken.slice(0, x!.leaseToken.indexOf('.'));
    assert.match(base, /^[A-Za-z0-9_-]{22}$/, '128 random bits, base64url');
    assert.equal(x!.leaseToken, `${base}.${x!.id}`);
    assert.equal(y!.leaseToken, `${base}.${y!.id}`);
    // what the row holds is what the worker computed: the fence accepts it
    const [done] = await s.leases.finish({ items: [{ id: x!.id, leaseToken: x!.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] });
    assert.equal(done?.applied, true);
    const again = (await s.leases.claim({ workerId: 'w', types: ['tokens'], queues: null, limit: 10, leaseMs: 30_000 })).find((j) => j.id === x!.id);
    assert.ok(again, 'the failed job is claimed again');
    await s.jobs.insert({ jobs: [job('tokens')] });
    assert.notEqual(again?.leaseToken, x!.leaseToken, 'a new claim of the same job gets a new base');
    // a worker of the previous version calls the five-argument claim_jobs, with tokens made by the server
    const old = (await c.query(`SELECT id, lease_token FROM ${q}.claim_jobs($1::text, $2::text[], $3::text[], $4::int, $5::float8)`, ['old', ['tokens'], null, 5, 30_000])).rows;
    assert.equal(old.length, 1);
    assert.match(old[0].lease_token, /^[0-9a-f]{32}$/);
    const [landed] = await s.leases.finish({ items: [{ id: String(old[0].id), leaseToken: old[0].lease_token, status: 'succeeded', attempt: { outcome: 'succeeded' } }] });
    assert.equal(landed?.applied, true);
  });

  it("a batch of successes names the worker only where this storage made all its claims; each attempt row records the lease's own worker", async () => {
    const s = fresh();
    await s.migrate();
    const other = fresh(s.schema);
    await s.jobs.insert({ jobs: Array.from({ length: 12 }, () => job('who')) });
    const claim = (on: typeof s, workerId: string) => on.leases.claim({ workerId, types: ['who'], queues: null, limit: 3, leaseMs: 30_000 });
    const [a, b, c] = [await claim(s, 'wa'), await claim(s, 'wb'), await claim(other, 'wc')];
    const d = await claim(s, 'wa');
    // which success finish each batch was sent to
    const sent: string[] = [];
    const query = s.pool.query.bind(s.pool) as (...args: unknown[]) => unknown;
    (s.pool as unknown as { query: unknown }).query = (q: unknown, ...rest: unknown[]) => {
      const text = typeof q === 'string' ? q : String((q as { text?: string }).text);
      const m = /finish_succeeded\(([^)]*)\)/.exec(text);
      if (m) sent.push(m[1]!.includes('$3') ? 'named' : 'read back');
      return query(q, ...rest);
    };
    const succeed = (jobs: typeof a) => s.leases.finish({ items: jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
    for (const batch of [a, [...b, ...d], c]) assert.deepEqual((await succeed(batch)).map((r) => r.applied), batch.map(() => true));
    // one worker's claims, all made here: named; two workers', or claims made by another storage: read back
    assert.deepEqual(sent, ['named', 'read back', 'read back']);
    for (const [jobs, worker] of [[a, 'wa'], [b, 'wb'], [c, 'wc'], [d, 'wa']] as const) {
      for (const j of jobs) {
        const attempts = await s.attempts.list({ jobId: j.id });
        assert.deepEqual(attempts.map((x) => [x.workerId, x.leaseToken, x.outcome]), [[worker, j.leaseToken, 'succeeded']], `job ${j.id}`);
      }
    }
    // inside the caller's transaction (where a refused statement would abort it): read back
    await s.jobs.insert({ jobs: [job('who')] });
    const [e] = await claim(s, 'wa');
    const tx = await client();
    const txSent: string[] = [];
    const txQuery = tx.query.bind(tx) as (...args: unknown[]) => unknown;
    (tx as unknown as { query: unknown }).query = (qq: unknown, ...rest: unknown[]) => {
      const m = /finish_succeeded\(([^)]*)\)/.exec(typeof qq === 'string' ? qq : String((qq as { text?: string }).text));
      if (m) txSent.push(m[1]!.includes('$3') ? 'named' : 'read back');
      return txQuery(qq, ...rest);
    };
    await tx.query('BEGIN');
    assert.deepEqual((await s.leases.finish({ items: [{ id: e!.id, leaseToken: e!.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' } }], tx })).map((r) => r.applied), [true]);
    await tx.query('COMMIT');
    assert.deepEqual(txSent, ['read back']);
    assert.deepEqual((await s.attempts.list({ jobId: e!.id })).map((x) => x.workerId), ['wa']);
    // a token that is not a string (a job row's null) names nobody and lands nothing
    const before = sent.length;
    assert.deepEqual((await s.leases.finish({ items: [{ id: e!.id, leaseToken: null as unknown as string, status: 'succeeded', attempt: { outcome: 'succeeded' } }] })).map((r) => r.applied), [false]);
    assert.deepEqual(sent.slice(before), ['read back']);
    // a lease lost to another claim is not landed through the named finish either
    await s.jobs.insert({ jobs: [job('who')] });
    const [lost] = await claim(s, 'wa');
    await s.leases.finish({ items: [{ id: lost!.id, leaseToken: lost!.leaseToken, status: 'failed', runAfterMs: 0, attempt: { outcome: 'failed' } }] });
    const [retaken] = await claim(s, 'wa');
    assert.equal(retaken?.id, lost!.id);
    const [stale] = await succeed([lost!]);
    assert.equal(stale?.applied, false);
    assert.equal(sent.at(-1), 'named');
    assert.deepEqual((await s.attempts.list({ jobId: lost!.id })).map((x) => x.outcome), ['failed', 'running'], 'the first attempt failed, the second still runs');
  });

  it('on a schema still at 7 (no named finish yet) the successes are read back: they land, once refused', async () => {
    const s = fresh();
    await s.migrate();
    const q = quoteSchema(s.schema);
    const c = await client();
    await c.query(`DROP FUNCTION ${q}.finish_succeeded(bigint[], text[], text)`);
    await c.query(`DELETE FROM ${q}.migrations WHERE version = 8`);
    await s.jobs.insert({ jobs: Array.from({ length: 4 }, () => job('seven')) });
    const refused: string[] = [];
    const query = s.pool.query.bind(s.pool) as (...args: unknown[]) => Promise<unknown>;
    (s.pool as unknown as { query: unknown }).query = (qq: unknown, ...rest: unknown[]) => {
      const text = typeof qq === 'string' ? qq : String((qq as { text?: string }).text);
      return query(qq, ...rest).catch((e: { code?: string }) => {
        refused.push(`${/\$3::text\)/.test(text) ? 'named' : 'other'} ${e.code}`);
        throw e;
      });
    };
    for (let round = 0; round < 2; round++) {
      const claimed = await s.leases.claim({ workerId: 'w7', types: ['seven'], queues: null, limit: 2, leaseMs: 30_000 });
      const done = await s.leases.finish({ items: claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } })) });
      assert.deepEqual(done.map((r) => r.applied), [true, true]);
      for (const j of claimed) assert.deepEqual((await s.attempts.list({ jobId: j.id })).map((a) => [a.workerId, a.outcome]), [['w7', 'succeeded']]);
    }
    assert.deepEqual(refused, ['named 42883'], 'asked once, then not again');
  });

  it('error text with NUL characters (which PostgreSQL text cannot hold) still lands, as U+FFFD', async () => {
    const s = fresh();
    await s.migrate();
    await s.jobs.insert({ jobs: [job('nul')] });
    const [c] = await s.leases.claim({ workerId: 'w', types: ['nul'], queues: null, limit: 1, leaseMs: 30_000 });
    assert.ok(c);
    const err = { code: 'E\0', message: 'bad\0byte', stack: 'at\0x' };
    const [r] = await s.leases.finish({ items: [{ id: c.id, leaseToken: c.leaseToken, status: 'failed', runAfterMs: 0, error: err, attempt: { outcome: 'failed', error: err } }] });
    assert.equal(r?.applied, true);
    const j = await s.jobs.get({ id: c.id });
    assert.equal(j?.lastError, 'bad\uFFFDbyte');
    assert.equal((await s.attempts.list({ jobId: c.id }))[0]?.errorStack, 'at\uFFFDx');
  });
});
