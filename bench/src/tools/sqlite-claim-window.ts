/** SQLite claim: window over every due row (the claim in sqlite/leases.ts) vs over the LIMIT rows only; 500 ten-job claims each on a 20k-due table. */
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
const f = '/tmp/lh-claim-proto.db'; for (const x of [f, f + '-wal', f + '-shm']) rmSync(x, { force: true });
const d = new Database(f); d.pragma('journal_mode = WAL'); d.pragma('synchronous = NORMAL');
d.exec(`CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT, type TEXT, status TEXT, priority INT, run_at INT, lease_token TEXT, attempts INT, locked_by TEXT, locked_until INT, started_at INT, heartbeat_at INT, updated_at INT);
CREATE INDEX jobs_claim_idx ON jobs (priority, run_at, id) WHERE status IN ('queued','failed');`);
const now = Date.now();
d.prepare(`WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM g WHERE x < 20000) INSERT INTO jobs (queue,type,status,priority,run_at,attempts) SELECT 'default','noop','queued',0,${now - 1000},0 FROM g`).run();
const set = `SET status = 'running', locked_by = 'w', lease_token = json_extract(@tokens, '$[' || picked.rn || ']'), locked_until = @now + 30000, heartbeat_at = @now, started_at = @now, attempts = attempts + 1, updated_at = @now FROM picked WHERE jobs.id = picked.id RETURNING *`;
const where = `WHERE status IN ('queued','failed') AND run_at <= @now AND type IN (SELECT value FROM json_each(@types)) AND (@queues IS NULL OR queue IN (SELECT value FROM json_each(@queues)))`;
const orig = d.prepare(`WITH picked AS (SELECT id, row_number() OVER (ORDER BY priority, run_at, id) - 1 AS rn FROM jobs ${where} ORDER BY priority, run_at, id LIMIT @limit) UPDATE jobs ${set}`);
const fixed = d.prepare(`WITH top AS (SELECT id, priority, run_at FROM jobs ${where} ORDER BY priority, run_at, id LIMIT @limit),
  picked AS (SELECT id, row_number() OVER (ORDER BY priority, run_at, id) - 1 AS rn FROM top) UPDATE jobs ${set}`);
for (const [name, st] of [['window over every due row (current)', orig], ['window over the LIMIT rows only', fixed]] as const) {
  const tokens = JSON.stringify(Array.from({ length: 10 }, (_, i) => `t${i}`));
  const t = performance.now(); let n = 0;
  for (let i = 0; i < 500; i++) n += d.transaction(() => st.all({ now, types: '["noop"]', queues: null, limit: 10, tokens }).length).immediate();
  console.log(`${name}: ${((performance.now() - t) / 500).toFixed(3)} ms per 10-job claim (${n} claimed; ${20000 - (name.includes('current') ? 0 : 5000)} due at start)`);
}
console.log(d.prepare(`EXPLAIN QUERY PLAN WITH picked AS (SELECT id, row_number() OVER (ORDER BY priority, run_at, id) - 1 AS rn FROM jobs ${where} ORDER BY priority, run_at, id LIMIT @limit) SELECT * FROM picked`).all({ now, types: '["noop"]', queues: null, limit: 10 }).map((r) => (r as { detail: string }).detail).join('\n'));
d.close();
