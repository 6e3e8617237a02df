/**
 * EXPLAIN (ANALYZE, BUFFERS) of leasehold's PostgreSQL claim and finish statements on a table
 * holding `due` queued jobs (and optionally `finished` finished rows), inside transactions that
 * roll back: node --import tsx src/tools/explain-pg.ts [due] [finished] [analyze:0|1] [limit]
 */
import pg from 'pg';
// @ts-expect-error: node-postgres' value formatter has no type declarations
import { prepareValue } from 'pg/lib/utils.js';
import { leasesSql } from '../../../src/storage/postgres/leases.ts';
import { PG_URL } from '../common.ts';
import { findSystem } from '../systems/index.ts';

const [dueArg = '20000', finArg = '0', analyzeArg = '0', limitArg = '10'] = process.argv.slice(2);
const sys = findSystem('leasehold-postgres');
await sys.reset();
if (Number(finArg) > 0 || analyzeArg === '1') await sys.seedSpike?.(Number(finArg), Number(dueArg));
else {
  const p = await sys.producer();
  const items = Array.from({ length: Number(dueArg) }, (_, i) => ({ i }));
  for (let i = 0; i < items.length; i += 1000) await p.enqueueBulk(items.slice(i, i + 1000));
  await p.close();
}
const sql = leasesSql('"bench_leasehold"');
const c = new pg.Client({ connectionString: PG_URL });
await c.connect();
const explain = async (label: string, text: string, params: unknown[]) => {
  await c.query('BEGIN');
  // e.g. EXPLAIN_SET=enable_bitmapscan=off to see the plan with that setting; EXPLAIN_GENERIC=1 for prepared plans
  if (process.env.EXPLAIN_SET) await c.query(`SET LOCAL ${process.env.EXPLAIN_SET}`);
  let rows: Record<string, unknown>[];
  if (process.env.EXPLAIN_GENERIC) {
    // the plan a prepared statement settles on after its first executions (a generic plan)
    await c.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await c.query(`PREPARE explained AS ${text}`);
    // EXECUTE takes no bind parameters: pass the values as literals, formatted as pg sends them
    const lit = (v: unknown) => (v === null ? 'NULL' : c.escapeLiteral(String(prepareValue(v))));
    rows = (await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE explained(${params.map(lit).join(', ')})`)).rows;
    await c.query('DEALLOCATE explained');
  } else rows = (await c.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text.replace(/^--.*\n/, '')}`, params)).rows;
  await c.query('ROLLBACK');
  console.log(`---- ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
};
const limit = Number(limitArg);
await explain(`claim (limit ${limit})`, sql.claim, ['w1', ['noop'], null, limit, 30000, 'explain']);
// a real claim to get leases to finish
const claimed = (await c.query(sql.claim, ['w1', ['noop'], null, limit, 30000, 'explain'])).rows;
const ids = claimed.map((r) => r.id);
const k = ids.length;
const arr = <T>(v: T) => Array.from({ length: k }, () => v);
await explain(`finish (${k} jobs)`, sql.finish, [
  ids, ids.map((id) => `explain.${id}`), arr('succeeded'), arr(null), arr(false), arr(false), arr(null), arr(null),
  arr('succeeded'), arr(null), arr(null), arr(null), arr(null), arr(false), 'leasehold_bench_none', 'x',
]);
await c.end();
await sys.cleanup();
process.exit(0);
