/**
 * The plans PostgreSQL runs the dashboard's workflow reads with, read from auto_explain on the
 * storage's own connection, on a table of 30,000 jobs and 10,000 edges of another workflow: a workflow's graph reaches its jobs and
 * edges by the primary key and the child index, and a batch's members come from jobs_batch_idx
 * in order; neither reads the whole jobs or job_dependencies table.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import type { FlowJob } from '../../src/core/storage.js';
import { postgresStorage, quoteSchema } from '../../src/storage/postgres/index.js';
import { serverFor } from '../support/databases.js';
import { job, postgresFixtures } from './postgres-support.js';

const url = await serverFor('postgres', 'postgres workflow read plans');

const AUTO_EXPLAIN = '-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 -c auto_explain.log_nested_statements=on -c auto_explain.log_level=notice -c client_min_messages=notice';

describe('postgres plans of the workflow reads', { skip: url === null }, () => {
  const { made, schemas, client } = postgresFixtures(url);
  const pools: pg.Pool[] = [];
  after(async () => {
    for (const p of pools) await p.end();
  });

  it('graph and batchMembers: no sequential scan, every index scan with its condition, members without a sort', async () => {
    const pool = new pg.Pool({ connectionString: url as string, max: 1, options: AUTO_EXPLAIN });
    pools.push(pool);
    const logged: string[] = [];
    pool.on('connect', (c) => c.on('notice', (n) => logged.push(n.message ?? '')));
    const s = postgresStorage({ pool, schema: `lh_t_${randomBytes(6).toString('hex')}` });
    made.push(s);
    schemas.push(s.schema);
    await s.migrate();
    for (let i = 0; i < 20_000; i += 1_000) await s.jobs.insert({ jobs: Array.from({ length: 1_000 }, (_, k) => job(`t${(i + k) % 5}`)) });
    // a large workflow elsewhere: 10,000 edges a plan must not read for another one
    await s.workflows.insertFlow({ jobs: Array.from({ length: 10_001 }, (_, i): FlowJob => ({ ...job('fan'), parents: i === 0 ? [] : [0] })), onParentFailure: 'cancel' });
    const batch = await s.workflows.createBatch({ callback: job('cb'), onSuccessOnly: false });
    let target = '';
    for (let w = 0; w < 50; w++) {
      const rows = await s.workflows.insertFlow({ jobs: [0, 1, 2, 3].map((i): FlowJob => ({ ...job('d'), parents: i === 0 ? [] : i === 3 ? [1, 2] : [0] })), onParentFailure: 'cancel', ...(w === 25 ? { batchId: batch.id } : {}) });
      if (w === 25) target = rows[3]!.id;
    }
    const c = await client();
    await c.query(`ANALYZE ${quoteSchema(s.schema)}.jobs; ANALYZE ${quoteSchema(s.schema)}.job_dependencies`);
    logged.length = 0;
    const g = await s.workflows.graph({ jobId: target, limit: 500 });
    assert.equal(g.jobs.length, 4);
    const members = await s.workflows.batchMembers({ batchId: batch.id, limit: 50 });
    assert.equal(members.length, 4);
    const plan = (re: RegExp): string => {
      const found = logged.filter((p) => re.test(p));
      assert.equal(found.length, 1, `one plan for ${re}:\n${logged.join('\n----\n')}`);
      return found[0]!;
    };
    for (const p of [plan(/leasehold graph/), plan(/leasehold batchMembers/)]) {
      assert.doesNotMatch(p, /Seq Scan on (jobs|job_dependencies)\b/, p);
      const lines = p.split('\n');
      lines.forEach((line, i) => {
        if (/Scan using \w+ on (jobs|job_dependencies)\b|Bitmap Index Scan on/.test(line)) assert.match(lines[i + 1] ?? '', /Index Cond/, `${line}\n${p}`);
      });
    }
    const m = plan(/leasehold batchMembers/);
    assert.match(m, /Index Scan using jobs_batch_idx on jobs/, m);
    assert.doesNotMatch(m, /Sort/, m);
  });
});
