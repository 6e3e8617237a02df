/** EXPLAIN ANALYZE of leasehold's PostgreSQL insert for one 1,000-job batch (rolled back), and a plain unnest INSERT for contrast. */
import pg from 'pg';
import { insertSql } from '../../../src/storage/postgres/insert.ts';
import { PG_URL } from '../common.ts';
import { findSystem } from '../systems/index.ts';

const k = Number(process.argv[2] ?? 1000);
const sys = findSystem('leasehold-postgres');
await sys.reset();
const sql = insertSql('"bench_leasehold"');
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
const rep = <T>(v: T) => Array.from({ length: k }, () => v);
const args = [rep('default'), rep('noop'), rep('{"i":1}'), rep(0), rep(null), rep(0), rep(5), rep(null), rep(300000), rep(3600000), 'leasehold', 'bench_leasehold', [], [], []];
for (const [label, text, params] of [
  ['leasehold insert', sql.insertKeyed.replace(/^--.*\n/, ''), args],
  ['plain unnest INSERT', `INSERT INTO bench_leasehold.jobs (queue, type, payload, status, max_attempts, timeout_ms, max_runtime_ms)
     SELECT q, t, p, 'queued', m, tm, mr FROM unnest($1::text[], $2::text[], $3::json[], $4::int[], $5::bigint[], $6::bigint[]) AS u(q, t, p, m, tm, mr)`,
    [rep('default'), rep('noop'), rep('{"i":1}'), rep(5), rep(300000), rep(3600000)]],
] as const) {
  for (let warm = 0; warm < 2; warm++) {
    await c.query('BEGIN');
    const rows = (await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, params as unknown[])).rows.map((r) => r['QUERY PLAN'] as string);
    await c.query('ROLLBACK');
    if (warm === 1) console.log(`---- ${label} (${k} rows)\n${rows.join('\n')}`);
  }
}
await c.end();
await sys.cleanup();
process.exit(0);
