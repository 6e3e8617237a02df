/**
 * Which due jobs of one limited type a claim may take on SQLite: core/flow.ts's plan, driven by
 * reads of this file's statements, its buckets written back. Runs inside the claim's IMMEDIATE
 * transaction: no other connection writes until it commits, so the running counts and tokens it
 * reads cannot change under it (SQLite's write lock is the per-type serialisation).
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, type TypeFlow, bucketName, flowPlan, runFlowPlan } from '../../core/flow.js';
import type { ClaimParams } from '../../core/storage.js';
import type { SqliteDb } from './db.js';

/** Jobs of a paused queue are never claimed; a primary-key probe per row read (cheaper than building a NOT IN list per statement). */
export const NOT_PAUSED = `NOT EXISTS (SELECT 1 FROM {p}queue_states q WHERE q.queue = {p}jobs.queue AND q.paused = 1)`;

/** Only the queue filter in use goes into the SQL. */
function candidatesSql(byQueue: boolean): string {
  return `-- leasehold flow.candidates: due jobs of @type${byQueue ? ' in @queues' : ''} in unpaused queues in claim order, leaving out @excludeKeys and @excludeIds, at most @window
    SELECT id, concurrency_key AS key FROM {p}jobs
    WHERE status IN ('queued','failed') AND run_at <= @now AND type = @type${byQueue ? '\n      AND queue IN (SELECT value FROM json_each(@queues))' : ''}
      AND ${NOT_PAUSED}
      AND (concurrency_key IS NULL OR concurrency_key NOT IN (SELECT value FROM json_each(@excludeKeys)))
      AND id NOT IN (SELECT value FROM json_each(@excludeIds))
    ORDER BY priority, run_at, id LIMIT @window`;
}
const CANDIDATES_SQL = candidatesSql(false);
const CANDIDATES_BY_QUEUE_SQL = candidatesSql(true);

const FLOW_SQL = {
  running: `-- leasehold flow.running: running jobs of one type by concurrency key (NULL: jobs without one)
    SELECT concurrency_key AS key, count(*) AS n FROM {p}jobs WHERE status = 'running' AND type = ? GROUP BY concurrency_key`,
  buckets: `-- leasehold flow.buckets: the stored token buckets among these names (a JSON array)
    SELECT name, tokens, refilled_at FROM {p}flow_buckets WHERE name IN (SELECT value FROM json_each(?))`,
  saveBucket: `-- leasehold flow.saveBucket: a bucket's tokens as the claim left them
    INSERT INTO {p}flow_buckets (name, tokens, refilled_at) VALUES (?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at`,
} as const;

/** The stored buckets of these names. */
function readBuckets(db: SqliteDb, names: readonly string[]): Map<string, Bucket> {
  const rows = db.stmt(FLOW_SQL.buckets).all(JSON.stringify(names)) as { name: string; tokens: number; refilled_at: number }[];
  return new Map(rows.map((r) => [r.name, { tokens: r.tokens, refilledAt: r.refilled_at }]));
}

/** The ids of `type`'s due jobs its plan picks, at most `limit`; the buckets it used are written. Call inside a write transaction. */
export function pickLimited(db: SqliteDb, type: string, flow: TypeFlow, p: ClaimParams, now: number, limit: number): number[] {
  if (limit <= 0) return [];
  let running = 0;
  const runningByKey = new Map<string, number>();
  for (const r of db.stmt(FLOW_SQL.running).all(type) as { key: string | null; n: number }[]) {
    running += r.n;
    if (r.key !== null) runningByKey.set(r.key, r.n);
  }
  const rate = flow.rate;
  const typeBucket = rate && !rate.perKey ? readBuckets(db, [type]).get(type) : undefined;
  const byQueue = p.queues !== null;
  const candidates = db.stmt(byQueue ? CANDIDATES_BY_QUEUE_SQL : CANDIDATES_SQL);
  const read = (q: CandidateQuery): FlowCandidate[] => {
    const rows = candidates.all({
      now, type, window: q.window, excludeKeys: JSON.stringify(q.excludeKeys), excludeIds: JSON.stringify(q.excludeIds.map(Number)),
      ...(byQueue ? { queues: JSON.stringify(p.queues) } : {}),
    }) as { id: number; key: string | null }[];
    const out: FlowCandidate[] = rows.map((r) => ({ id: String(r.id), key: r.key }));
    if (rate?.perKey) {
      const buckets = readBuckets(db, [...new Set(out.map((c) => bucketName(type, c.key, rate)))]);
      for (const c of out) c.bucket = buckets.get(bucketName(type, c.key, rate));
    }
    return out;
  };
  const pick = runFlowPlan(flowPlan(type, flow, { running, runningByKey, typeBucket }, now, limit), read);
  const save = db.stmt(FLOW_SQL.saveBucket);
  for (const [name, b] of pick.buckets) save.run(name, b.tokens, b.refilledAt);
  return pick.ids.map(Number);
}
