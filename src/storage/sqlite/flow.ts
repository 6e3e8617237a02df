/**
 * Which due jobs of one limited group (core/flow-groups.ts) a claim may take on SQLite:
 * core/flow.ts's plan, driven by reads of this file's statements, its buckets written back. Runs
 * inside the claim's IMMEDIATE transaction: no other connection writes until it commits, so the
 * running counts and tokens it reads cannot change under it (SQLite's write lock is the
 * serialisation of every scope).
 */
import { type Bucket, type CandidateQuery, type FlowCandidate, flowPlan, runFlowPlan } from '../../core/flow.js';
import { type FlowGroup, type RunningCount, keyBucketNames, lockNames, runningFilter, scopeStates } from '../../core/flow-groups.js';
import type { SqliteDb } from './db.js';

/** Jobs of a paused queue are never claimed; a primary-key probe per row read (cheaper than building a NOT IN list per statement). */
export const NOT_PAUSED = `NOT EXISTS (SELECT 1 FROM {p}queue_states q WHERE q.queue = {p}jobs.queue AND q.paused = 1)`;

/** Only the queue filter in use goes into the SQL: the group's queues, or every queue but @exceptQueues. */
function candidatesSql(byQueue: boolean): string {
  return `-- leasehold flow.candidates: due jobs of @types${byQueue ? ' in @queues' : ' outside @exceptQueues'} in unpaused queues in claim order, leaving out @excludeKeys, @excludeTypes, @excludeTypeKeys and @excludeIds, at most @window
    SELECT id, type, queue, concurrency_key AS key FROM {p}jobs
    WHERE status IN ('queued','failed') AND run_at <= @now AND type IN (SELECT value FROM json_each(@types))
      AND ${byQueue ? 'queue IN (SELECT value FROM json_each(@queues))' : 'queue NOT IN (SELECT value FROM json_each(@exceptQueues))'}
      AND ${NOT_PAUSED}
      AND type NOT IN (SELECT value FROM json_each(@excludeTypes))
      AND (concurrency_key IS NULL OR (concurrency_key NOT IN (SELECT value FROM json_each(@excludeKeys))
        AND type || '|' || concurrency_key NOT IN (SELECT value FROM json_each(@excludeTypeKeys))))
      AND id NOT IN (SELECT value FROM json_each(@excludeIds))
    ORDER BY priority, run_at, id LIMIT @window`;
}
const CANDIDATES_SQL = candidatesSql(false);
const CANDIDATES_BY_QUEUE_SQL = candidatesSql(true);

const FLOW_SQL = {
  running: `-- leasehold flow.running: running jobs of these types (a JSON array) or in these queues (another) by type, queue and concurrency key
    SELECT type, queue, concurrency_key AS key, count(*) AS n FROM {p}jobs
    WHERE status = 'running' AND (type IN (SELECT value FROM json_each(?)) OR queue IN (SELECT value FROM json_each(?)))
    GROUP BY type, queue, concurrency_key`,
  buckets: `-- leasehold flow.buckets: the stored token buckets among these names (a JSON array)
    SELECT name, tokens, refilled_at FROM {p}flow_buckets WHERE name IN (SELECT value FROM json_each(?))`,
  saveBucket: `-- leasehold flow.saveBucket: a bucket's tokens as the claim left them
    INSERT INTO {p}flow_buckets (name, tokens, refilled_at) VALUES (?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at`,
} as const;

/** The stored buckets of these names. */
function readBuckets(db: SqliteDb, names: readonly string[]): Map<string, Bucket> {
  if (names.length === 0) return new Map();
  const rows = db.stmt(FLOW_SQL.buckets).all(JSON.stringify(names)) as { name: string; tokens: number; refilled_at: number }[];
  return new Map(rows.map((r) => [r.name, { tokens: r.tokens, refilledAt: r.refilled_at }]));
}

/** The ids of the group's due jobs its plan picks, at most `limit`; the buckets it used are written. Call inside a write transaction. */
export function pickLimited(db: SqliteDb, group: FlowGroup, now: number, limit: number): number[] {
  if (limit <= 0) return [];
  const scope = runningFilter(group);
  const running = db.stmt(FLOW_SQL.running).all(JSON.stringify(scope.types), JSON.stringify(scope.queues)) as RunningCount[];
  const wide = group.scopes.some((s) => s.flow.rate && !s.flow.rate.perKey) ? readBuckets(db, lockNames(group)) : new Map<string, Bucket>();
  const byQueue = group.queues !== null;
  const candidates = db.stmt(byQueue ? CANDIDATES_BY_QUEUE_SQL : CANDIDATES_SQL);
  const read = (q: CandidateQuery): FlowCandidate[] => {
    const rows = candidates.all({
      now, types: JSON.stringify(group.types), window: q.window, excludeKeys: JSON.stringify(q.excludeKeys), excludeTypes: JSON.stringify(q.excludeTypes),
      excludeTypeKeys: JSON.stringify(q.excludeTypeKeys), excludeIds: JSON.stringify(q.excludeIds.map(Number)),
      ...(byQueue ? { queues: JSON.stringify(group.queues) } : { exceptQueues: JSON.stringify(group.exceptQueues) }),
    }) as { id: number; type: string; queue: string; key: string | null }[];
    const buckets = readBuckets(db, keyBucketNames(group.scopes, rows));
    return rows.map((r) => ({ id: String(r.id), type: r.type, queue: r.queue, key: r.key, buckets }));
  };
  const pick = runFlowPlan(flowPlan(group.scopes, scopeStates(group.scopes, running, wide), now, limit), read);
  const save = db.stmt(FLOW_SQL.saveBucket);
  for (const [name, b] of pick.buckets) save.run(name, b.tokens, b.refilledAt);
  return pick.ids.map(Number);
}
