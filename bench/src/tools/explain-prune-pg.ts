/**
 * EXPLAIN (ANALYZE, BUFFERS) of PostgreSQL's prune, prunable and batch cleanup with workflows in
 * the table: `n` succeeded jobs finished a day ago, every tenth a workflow parent whose child is
 * still queued (held), batches of members among them; in a scratch schema, inside transactions
 * that roll back: node --import tsx src/tools/explain-prune-pg.ts [n] [limit]
 */
import pg from 'pg';
import { jobsSql } from '../../../src/storage/postgres/jobs.ts';
import { PG_URL } from '../common.ts';
import { openStorage } from '../../../src/index.ts';

const [nArg = '100000', limitArg = '1000'] = process.argv.slice(2);
const n = Number(nArg);
const S = 'h2_explain_prune';
const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${S}`;
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
await c.query(`DROP SCHEMA IF EXISTS ${S} CASCADE`);
const st = await openStorage(url);
await st.migrate();
await st.close();
// n finished parents (every tenth with one child still queued), batches of 100 members done
await c.query(`INSERT INTO ${S}.batches (id, state, on_success_only, total, pending, succeeded, callback, callback_type, created_at, finished_at)
  SELECT b, 'done', false, 100, 0, 100, '{}', 'cb', now() - interval '2 days', now() - interval '1 day' FROM generate_series(1, $1::int / 1000) b`, [n]);
await c.query(`INSERT INTO ${S}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
    created_at, updated_at, finished_at, dependents, batch_id)
  SELECT i, 'default', 'p', '{}', 'succeeded', 0, now() - interval '2 days', 1, 3, 60000, 0, now() - interval '2 days', now(),
         now() - interval '1 day' + i * interval '1 ms', CASE WHEN i % 10 = 0 THEN 1 END, CASE WHEN i % 10 = 1 THEN i / 1000 + 1 END
  FROM generate_series(1, $1::int) i`, [n]);
await c.query(`INSERT INTO ${S}.jobs (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms,
    created_at, updated_at, pending_parents, parent_policy)
  SELECT $1::int + i, 'default', 'c', '{}', 'queued', 0, now() + interval '1 day', 0, 3, 60000, 0, now(), now(), 0, 'cancel'
  FROM generate_series(1, $1::int / 10) i`, [n]);
await c.query(`INSERT INTO ${S}.job_dependencies (parent_id, child_id) SELECT i * 10, $1::int + i FROM generate_series(1, $1::int / 10) i`, [n]);
await c.query(`SELECT setval('${S}.jobs_id_seq', $1::int * 2)`, [n]);
await c.query(`ANALYZE ${S}.jobs; ANALYZE ${S}.job_dependencies; ANALYZE ${S}.batches`);
const sql = jobsSql(S);
const explain = async (label: string, text: string, params: unknown[]) => {
  await c.query('BEGIN');
  const rows = (await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text.replace(/^--.*\n/, '')}`, params)).rows;
  await c.query('ROLLBACK');
  console.log(`---- ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
};
const limit = Number(limitArg);
await explain(`prune (limit ${limit}) of ${n} succeeded jobs, ${n / 10} held by a queued child`, sql.prune, [['succeeded'], 3_600_000, limit]);
await explain('forgetBatches (10 candidates)', sql.forgetBatches, [Array.from({ length: 10 }, (_, i) => String(i + 1))]);
await c.query(`DROP SCHEMA ${S} CASCADE`);
await c.end();
process.exit(0);
