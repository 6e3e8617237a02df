/**
 * EXPLAIN of MariaDB/MySQL's prune candidates, prunable and done-batch cleanup with workflows in
 * the table (as explain-prune-pg.ts): `n` succeeded jobs finished a day ago, every tenth a
 * parent whose child is still queued, batches of members among them; in a scratch database
 * dropped afterwards: node --import tsx src/tools/explain-prune-mysql.ts [n]
 */
import mysql from 'mysql2/promise';
import { openStorage } from '../../../src/index.ts';
import { jobsSql } from '../../../src/storage/mysql/jobs.ts';
import { tables } from '../../../src/storage/mysql/sql.ts';
import { MYSQL_URL } from '../common.ts';

const n = Number(process.argv[2] ?? 100_000);
const DB = 'h2_explain_prune';
const admin = await mysql.createConnection({ uri: MYSQL_URL, multipleStatements: true });
await admin.query(`DROP DATABASE IF EXISTS ${DB}; CREATE DATABASE ${DB}`);
const st = await openStorage(`${MYSQL_URL}/${DB}`);
await st.migrate();
await st.close();
const c = await mysql.createConnection({ uri: `${MYSQL_URL}/${DB}`, multipleStatements: true });
const t = tables('leasehold_');
await c.query(`SET SESSION cte_max_recursion_depth = 10000000; SET SESSION max_recursive_iterations = 10000000`).catch(() => c.query('SET SESSION max_recursive_iterations = 10000000'));
await c.query(`INSERT INTO ${t.batches} (id, state, on_success_only, total, pending, succeeded, callback, callback_type, created_at, finished_at)
  WITH RECURSIVE s(b) AS (SELECT 1 UNION ALL SELECT b + 1 FROM s WHERE b < ?) SELECT b, 'done', 0, 100, 0, 100, '{}', 'cb', NOW(6) - INTERVAL 2 DAY, NOW(6) - INTERVAL 1 DAY FROM s`, [n / 1000]);
await c.query(`INSERT INTO ${t.jobs} (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at, finished_at, dependents, batch_id)
  WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
  SELECT i, 'default', 'p', '{}', 'succeeded', 0, NOW(6) - INTERVAL 2 DAY, 1, 3, 60000, 0, NOW(6) - INTERVAL 2 DAY, NOW(6), NOW(6) - INTERVAL 1 DAY + INTERVAL i MICROSECOND,
         IF(i % 10 = 0, 1, NULL), IF(i % 10 = 1, i DIV 1000 + 1, NULL) FROM s`, [n]);
await c.query(`INSERT INTO ${t.jobs} (id, queue, type, payload, status, priority, run_at, attempts, max_attempts, timeout_ms, max_runtime_ms, created_at, updated_at, pending_parents, parent_policy)
  WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
  SELECT ? + i, 'default', 'c', '{}', 'queued', 0, NOW(6) + INTERVAL 1 DAY, 0, 3, 60000, 0, NOW(6), NOW(6), 0, 'cancel' FROM s`, [n / 10, n]);
await c.query(`INSERT INTO ${t.dependencies} (parent_id, child_id) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i * 10, ? + i FROM s`, [n / 10, n]);
await c.query(`ANALYZE TABLE ${t.jobs}, ${t.dependencies}, ${t.batches}`);
const sql = jobsSql(t);
const explain = async (label: string, text: string, params: unknown[]) => {
  const [rows] = await c.query(`EXPLAIN ${text.replace(/^\s*--.*\n/, '')}`, params);
  console.log(`---- ${label}`);
  console.table((rows as Record<string, unknown>[]).map((r) => ({ id: r.id, select_type: r.select_type, table: r.table, type: r.type, key: r.key, rows: r.rows, Extra: r.Extra })));
};
await explain('pruneCandidates (limit 1000)', sql.pruneCandidates, [['succeeded'], 3_600_000_000, 1000]);
const times: number[] = [];
for (let r = 0; r < 7; r++) {
  await c.query('BEGIN');
  const t0 = performance.now();
  await c.query(sql.pruneCandidates, [['succeeded'], 3_600_000_000, 1000]);
  times.push(performance.now() - t0);
  await c.query('ROLLBACK');
}
console.log(`pruneCandidates ms, 7 runs sorted: ${times.sort((a, b) => a - b).map((x) => x.toFixed(1)).join(' ')}`);
await explain('forgetBatches (10 candidates)', sql.forgetBatches, [Array.from({ length: 10 }, (_, i) => i + 1)]);
await c.end();
await admin.query(`DROP DATABASE ${DB}`);
await admin.end();
process.exit(0);
