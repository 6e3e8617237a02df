/**
 * The plans PostgreSQL runs the adapter's hot statements with, read from auto_explain on the
 * storage's own connections: the claim, the sweep and queue health served by their partial
 * indexes on a table full of finished rows, the outcomes window by its index; the claim
 * reading its index in order on a table the planner has no statistics for (a fresh or
 * bulk-loaded one autovacuum has not analyzed yet), paused queues read once per claim, and a
 * limited type's claim the same; heartbeat, finish and the effect ledger's batches reaching
 * their rows by primary key, run after run; a unique key's holder found by its index.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { postgresStorage, quoteSchema, type PostgresStorage } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres plans');

const AUTO_EXPLAIN = '-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 -c auto_explain.log_nested_statements=on -c auto_explain.log_level=notice -c client_min_messages=notice';

describe('postgres plans of the hot statements', { skip: url === null }, () => {
  const { made, schemas, client } = postgresFixtures(url);
  const pools: pg.Pool[] = [];
  after(async () => {
    for (const p of pools) await p.end();
  });

  /** A migrated storage whose connections log every plan; `plans(re)` are the logged plans of statements matching `re`. */
  async function explaining(settings = ''): Promise<{ s: PostgresStorage; q: string; plans: (re: RegExp) => string[]; reset: () => void }> {
    const pool = new pg.Pool({ connectionString: url as string, max: 1, options: `${AUTO_EXPLAIN} ${settings}` });
    pools.push(pool);
    const logged: string[] = [];
    pool.on('connect', (c) => c.on('notice', (n) => logged.push(n.message ?? '')));
    const s = postgresStorage({ pool, schema: `lh_t_${randomBytes(6).toString('hex')}` });
    made.push(s);
    schemas.push(s.schema);
    await s.migrate();
    const q = quoteSchema(s.schema);
    logged.length = 0;
    return { s, q, plans: (re) => logged.filter((p) => re.test(p)), reset: () => void (logged.length = 0) };
  }

  const succeed = (j: { id: string; leaseToken: string }) => ({ id: j.id, leaseToken: j.leaseToken, status: 'succeeded' as const, attempt: { outcome: 'succeeded' as const } });
  /** No sequential scan of `jobs` or `effects`, and every index scan of them has an index condition (no whole-index walk). */
  const noFullScans = (plan: string): void => {
    assert.doesNotMatch(plan, /Seq Scan on (jobs|effects)/, plan);
    const lines = plan.split('\n');
    lines.forEach((line, i) => {
      if (/Scan using \w+ on (jobs|effects)\b|Bitmap Index Scan on/.test(line)) assert.match(lines[i + 1] ?? '', /Index Cond/, `${line}\n${plan}`);
    });
  };
  const one = (plans: string[], what: string): string => {
    assert.equal(plans.length, 1, `one ${what} plan:\n${plans.join('\n----\n')}`);
    return plans[0] as string;
  };

  it('the claim and the sweep are served by their partial indexes on a table full of finished rows', async () => {
    const { s, q, plans, reset } = await explaining();
    const c = await client();
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, finished_at)
      SELECT 'default', 'bulk', '{}'::json, 'succeeded', 0, now() - interval '1 hour', 3, 60000, 600000, now() - interval '30 minutes'
      FROM generate_series(1, 20000)`);
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms)
      SELECT 'default', 'bulk', '{}'::json, 'queued', 0, now() - interval '1 minute', 3, 60000, 600000
      FROM generate_series(1, 100)`);
    await c.query(`ANALYZE ${q}.jobs`);
    reset();
    assert.equal((await s.leases.claim({ workerId: 'w', types: ['bulk'], queues: null, limit: 10, leaseMs: 30_000 })).length, 10);
    const claim = one(plans(/picked AS/), 'claim');
    assert.match(claim, /Index Scan using jobs_due_idx/, claim);
    assert.doesNotMatch(claim, /Seq Scan on jobs/, claim);
    await c.query(`ANALYZE ${q}.jobs`);
    reset();
    assert.deepEqual(await s.leases.findExpired({ limit: 100, types: ['bulk'] }), []);
    const sweep = one(plans(/locked_until < /), 'sweep');
    assert.match(sweep, /jobs_running_lease_idx/, sweep);
  });

  it('queue health and the outcomes window read their indexes, not the finished rows and the whole history', async () => {
    const { s, q, plans, reset } = await explaining();
    const c = await client();
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, finished_at)
      SELECT 'default', 'bulk', '{}'::json, 'succeeded', 0, now() - interval '1 hour', 3, 60000, 600000, now() - interval '30 minutes'
      FROM generate_series(1, 20000)`);
    await c.query(`INSERT INTO ${q}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome)
      SELECT id, 1, 'w', 't' || id, finished_at, finished_at, 0, 0, 'succeeded' FROM ${q}.jobs`);
    await s.jobs.insert({ jobs: Array.from({ length: 50 }, () => job('bulk')) });
    await s.leases.claim({ workerId: 'w', types: ['bulk'], queues: null, limit: 10, leaseMs: 30_000 });
    await c.query(`ANALYZE ${q}.jobs; ANALYZE ${q}.job_attempts`);
    reset();
    assert.deepEqual((await s.queues.health()).map((h) => [h.queue, h.due, h.running]), [['default', 40, 10]]);
    assert.deepEqual(await s.attempts.outcomes({ sinceMs: 60_000 }), []);
    const health = one(plans(/leasehold queueHealth/), 'queue health');
    assert.match(health, /jobs_due_idx/, health);
    // the running arm reads all of its partial index: running rows only
    assert.match(health, /jobs_running_lease_idx/, health);
    assert.doesNotMatch(health, /Seq Scan on jobs/, health);
    const outcomes = one(plans(/leasehold attempts\.outcomes/), 'outcomes');
    assert.match(outcomes, /job_attempts_finished_at_idx/, outcomes);
    assert.doesNotMatch(outcomes, /Seq Scan on job_attempts/, outcomes);
  });

  it('on a table without statistics the claim reads jobs_due_idx in order and stops after its rows, claim after claim', async () => {
    const { s, q, plans, reset } = await explaining();
    // never analyzed: left to the planner's defaults, a claim sorts every due row
    await s.pool.query(`ALTER TABLE ${q}.jobs SET (autovacuum_enabled = false)`);
    for (let i = 0; i < 20; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, () => job('fresh')) });
    // several claims: a prepared statement's plan may change after its fifth run
    for (let round = 0; round < 7; round++) {
      reset();
      assert.equal((await s.leases.claim({ workerId: 'w', types: ['fresh'], queues: null, limit: 50, leaseMs: 30_000 })).length, 50);
      const claim = one(plans(/picked AS/), 'claim');
      assert.match(claim, /Index Scan using jobs_due_idx/, claim);
      noFullScans(claim);
      assert.doesNotMatch(claim, /Sort Method: \w+\s+Memory: \d{4,}kB/, claim);
    }
  });

  it('with a queue paused the claim still reads jobs_due_idx in order; the paused queues are read once, not probed per row', async () => {
    const { s, q, plans, reset } = await explaining();
    await s.pool.query(`ALTER TABLE ${q}.jobs SET (autovacuum_enabled = false)`);
    for (let i = 0; i < 10; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, (_, k) => job('fresh', { queue: k % 2 ? 'odd' : 'even' })) });
    await s.queues.pause({ queue: 'odd' });
    for (let round = 0; round < 7; round++) {
      reset();
      const got = await s.leases.claim({ workerId: 'w', types: ['fresh'], queues: null, limit: 50, leaseMs: 30_000 });
      assert.deepEqual([...new Set(got.map((j) => j.queue))], ['even']);
      const claim = one(plans(/picked AS/), 'claim');
      assert.match(claim, /Index Scan using jobs_due_idx/, claim);
      assert.match(claim, /InitPlan[^\n]*\n\s*-> {2}Index Scan using queue_states_pkey on queue_states/, claim);
      assert.doesNotMatch(claim, /Nested Loop|Seq Scan|JIT/, claim);
      noFullScans(claim);
    }
  });

  it("a limited type's claim reads jobs_due_idx in order and counts running jobs from the running index, on a table without statistics", async () => {
    const { s, q, plans, reset } = await explaining();
    await s.pool.query(`ALTER TABLE ${q}.jobs SET (autovacuum_enabled = false)`);
    for (let i = 0; i < 10; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, (_, k) => job('lim', { concurrencyKey: `k${k % 50}` })) });
    const flow = { lim: { maxRunningPerKey: 1, rate: { limit: 1000, periodMs: 60_000, perKey: true } } };
    for (let round = 0; round < 7; round++) {
      reset();
      assert.equal((await s.leases.claim({ workerId: 'w', types: ['lim'], queues: null, limit: 5, leaseMs: 30_000, flow })).length, 5);
      const candidates = plans(/due jobs of the group in unpaused queues/);
      assert.ok(candidates.length >= 1);
      for (const plan of candidates) {
        assert.match(plan, /Index Scan using jobs_due_idx/, plan);
        assert.doesNotMatch(plan, /Seq Scan|JIT|Sort Method: \w+\s+Memory: \d{4,}kB/, plan);
      }
      const running = one(plans(/running jobs of these types or in these queues by type, queue and concurrency key/), 'running count');
      assert.match(running, /jobs_running_lease_idx/, running);
      assert.doesNotMatch(running, /Seq Scan|JIT/, running);
      for (const plan of plans(/stored token buckets|lease the jobs the flow plan picked/)) noFullScans(plan);
    }
  });

  it("a unique key's holder is found by its partial unique index", async () => {
    const { s, q, plans, reset } = await explaining();
    for (let i = 0; i < 10; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, (_, k) => job('u', { unique: { key: `u${i}-${k}`, mode: 'active' } })) });
    await s.pool.query(`ANALYZE ${q}.jobs`);
    reset();
    const [again] = await s.jobs.insert({ jobs: [job('u', { unique: { key: 'u3-7', mode: 'active' } })] });
    assert.equal(again?.outcome, 'existing');
    const holder = one(plans(/job holding this unique key/), 'unique holder');
    assert.match(holder, /jobs_unique_key_idx/, holder);
    noFullScans(holder);
  });

  it('heartbeat and finish reach their rows by primary key, run after run', async () => {
    const { s, q, plans, reset } = await explaining();
    for (let i = 0; i < 20; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, () => job('due')) });
    await s.pool.query(`ANALYZE ${q}.jobs`);
    // batches the size a worker sends; each statement several times, past the switch to a generic plan
    for (let round = 0; round < 7; round++) {
      const claimed = await s.leases.claim({ workerId: 'w', types: ['due'], queues: null, limit: 30, leaseMs: 30_000 });
      reset();
      assert.deepEqual(await s.leases.heartbeat({ leases: claimed.map((j) => ({ id: j.id, leaseToken: j.leaseToken })), leaseMs: 30_000 }), { lost: [] });
      assert.equal((await s.leases.finish({ items: claimed.map(succeed) })).filter((r) => r.applied).length, 30);
      for (const [re, what] of [[/extended AS/, 'heartbeat'], [/upd AS/, 'finish']] as const) {
        const plan = one(plans(re), what);
        assert.match(plan, /Scan (using|on) jobs_pkey/, plan);
        assert.doesNotMatch(plan, /(using|on) jobs_running_lease_idx/, plan);
        noFullScans(plan);
      }
    }
  });

  it("the effect ledger's batches look jobs and effects up by primary key", async () => {
    const { s, q, plans, reset } = await explaining();
    for (let i = 0; i < 20; i++) await s.jobs.insert({ jobs: Array.from({ length: 1000 }, () => job('fx')) });
    await s.pool.query(`INSERT INTO ${q}.effects (key, job_id, lease_token, state, result, done_at)
      SELECT 'old-' || g, g, 'gone', 'done', 'null'::json, now() FROM generate_series(1, 20000) g`);
    await s.pool.query(`ANALYZE ${q}.jobs; ANALYZE ${q}.effects`);
    const claimed = await s.leases.claim({ workerId: 'w', types: ['fx'], queues: null, limit: 20, leaseMs: 30_000 });
    const items = claimed.map((j) => ({ key: `fx-${j.id}`, jobId: j.id, leaseToken: j.leaseToken }));
    reset();
    assert.deepEqual((await s.effects.reserveMany!({ items })).map((r) => r.state), items.map(() => 'reserved'));
    assert.deepEqual(await s.effects.completeMany!({ items: items.map((i) => ({ ...i, result: null })) }), items.map(() => true));
    // a second reserve finds them done: the batch read of their state
    assert.deepEqual((await s.effects.reserveMany!({ items })).map((r) => r.state), items.map(() => 'done'));
    const batches = plans(/input AS|unnest\(\$1::text\[\], \$2::bigint\[\], \$3::text\[\], \$4::json\[\]\)|e\.key = ANY/);
    assert.equal(batches.length, 4, batches.join('\n----\n'));
    const all = batches.join('\n----\n');
    assert.match(all, /Scan (using|on) jobs_pkey/, all);
    assert.match(all, /Scan (using|on) effects_pkey/, all);
    assert.doesNotMatch(all, /(using|on) jobs_running_lease_idx/, all);
    for (const plan of batches) noFullScans(plan);
  });
  it('a prune batch deletes its jobs and their history by primary key, never JIT-compiled, on history without statistics', async () => {
    // every statement that may be compiled is: the prune must opt out
    const { s, q, plans, reset } = await explaining('-c jit_above_cost=0 -c auto_explain.log_analyze=on');
    const c = await client();
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, finished_at)
      SELECT 'default', 'bulk', '{}'::json, 'succeeded', 0, now() - interval '9 days', 3, 60000, 600000, now() - interval '8 days' + g * interval '1 ms'
      FROM generate_series(1, 20000) g`);
    await c.query(`INSERT INTO ${q}.job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, wait_ms, outcome)
      SELECT id, 1, 'w', 't' || id, finished_at, finished_at, 0, 0, 'succeeded' FROM ${q}.jobs`);
    await c.query(`ANALYZE ${q}.jobs`);
    reset();
    assert.equal(await s.jobs.prune({ statuses: ['succeeded'], olderThanMs: 86_400_000, limit: 1000 }), 1000);
    const lock = one(plans(/leasehold pruneJobs: lock/), 'prune lock');
    const prune = one(plans(/leasehold pruneJobs \(delete\)/), 'prune');
    for (const plan of [lock, prune]) {
      assert.doesNotMatch(plan, /Seq Scan on (jobs|job_attempts)|Hash Join/, plan);
      assert.doesNotMatch(plan, /JIT:/, plan);
    }
    assert.match(prune, /Index Scan (using|on) job_attempts_pkey/, prune);
    assert.equal(Number((await c.query(`SELECT count(*) AS n FROM ${q}.job_attempts`)).rows[0].n), 19_000);
  });

  it('a prune batch after a cursor starts its scan of jobs_finished_at_idx at the cursor, not at the oldest entry', async () => {
    const { s, q, plans, reset } = await explaining('-c auto_explain.log_analyze=on');
    const c = await client();
    await c.query(`INSERT INTO ${q}.jobs (queue, type, payload, status, priority, run_at, max_attempts, timeout_ms, max_runtime_ms, finished_at)
      SELECT 'default', 'bulk', '{}'::json, 'succeeded', 0, now() - interval '9 days', 3, 60000, 600000, now() - interval '8 days' + g * interval '1 ms'
      FROM generate_series(1, 20000) g`);
    await c.query(`ANALYZE ${q}.jobs`);
    const first = await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 86_400_000, limit: 1000 });
    assert.equal(first.deleted, 1000);
    reset();
    const next = await s.jobs.pruneBatch({ statuses: ['succeeded'], olderThanMs: 86_400_000, limit: 1000, after: first.cursor });
    assert.equal(next.deleted, 1000);
    const prune = one(plans(/leasehold pruneJobs: lock/), 'prune lock');
    const lines = prune.split('\n');
    const scan = lines.findIndex((l) => /Index Scan using jobs_finished_at_idx on jobs/.test(l));
    assert.ok(scan >= 0, prune);
    // the cursor's bound is in the index condition: the scan begins there, past the entries the first batch deleted
    assert.match(lines[scan + 1] ?? '', /Index Cond: .*finished_at >= /, prune);
  });
});
