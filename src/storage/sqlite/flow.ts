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

/** Which filters a candidate read carries: only those in use go into the SQL (each variant is a cached statement). */
interface CandidateShape {
  /** the group's queues (`in`), every queue but some (`except`), or every queue */
  queues: 'in' | 'except' | 'all';
  /** the group has one type (@type) rather than a list (@types) */
  oneType: boolean;
  types: boolean;
  typeKeys: boolean;
}

const candidateTexts = new Map<string, string>();

function candidatesSql(o: CandidateShape): string {
  const id = JSON.stringify(o);
  let text = candidateTexts.get(id);
  if (text === undefined) {
    const queues = o.queues === 'in' ? ' in @queues' : o.queues === 'except' ? ' outside @exceptQueues' : '';
    text = `-- leasehold flow.candidates: due jobs of ${o.oneType ? '@type' : '@types'}${queues} in unpaused queues in claim order, leaving out @excludeKeys${o.types ? ', @excludeTypes' : ''}${o.typeKeys ? ', @excludeTypeKeys' : ''} and @excludeIds, at most @window
    SELECT id, type, queue, concurrency_key AS key FROM {p}jobs
    WHERE status IN ('queued','failed') AND run_at <= @now AND ${o.oneType ? 'type = @type' : 'type IN (SELECT value FROM json_each(@types))'}${
      o.queues === 'in' ? '\n      AND queue IN (SELECT value FROM json_each(@queues))' : o.queues === 'except' ? '\n      AND queue NOT IN (SELECT value FROM json_each(@exceptQueues))' : ''}
      AND ${NOT_PAUSED}${o.types ? '\n      AND type NOT IN (SELECT value FROM json_each(@excludeTypes))' : ''}
      AND (concurrency_key IS NULL OR (concurrency_key NOT IN (SELECT value FROM json_each(@excludeKeys))${
        o.typeKeys ? " AND type || '|' || concurrency_key NOT IN (SELECT value FROM json_each(@excludeTypeKeys))" : ''}))
      AND id NOT IN (SELECT value FROM json_each(@excludeIds))
    ORDER BY priority, run_at, id LIMIT @window`;
    candidateTexts.set(id, text);
  }
  return text;
}

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
  const queues = group.queues !== null ? 'in' : group.exceptQueues.length > 0 ? 'except' : 'all';
  const oneType = group.types.length === 1;
  const read = (q: CandidateQuery): FlowCandidate[] => {
    const o: CandidateShape = { queues, oneType, types: q.excludeTypes.length > 0, typeKeys: q.excludeTypeKeys.length > 0 };
    const rows = db.stmt(candidatesSql(o)).all({
      now, window: q.window, excludeKeys: JSON.stringify(q.excludeKeys), excludeIds: JSON.stringify(q.excludeIds.map(Number)),
      ...(oneType ? { type: group.types[0] } : { types: JSON.stringify(group.types) }),
      ...(queues === 'in' ? { queues: JSON.stringify(group.queues) } : queues === 'except' ? { exceptQueues: JSON.stringify(group.exceptQueues) } : {}),
      ...(o.types ? { excludeTypes: JSON.stringify(q.excludeTypes) } : {}),
      ...(o.typeKeys ? { excludeTypeKeys: JSON.stringify(q.excludeTypeKeys) } : {}),
    }) as { id: number; type: string; queue: string; key: string | null }[];
    const buckets = readBuckets(db, keyBucketNames(group.scopes, rows));
    return rows.map((r) => ({ id: String(r.id), type: r.type, queue: r.queue, key: r.key, buckets }));
  };
  const pick = runFlowPlan(flowPlan(group.scopes, scopeStates(group.scopes, running, wide), now, limit), read);
  const save = db.stmt(FLOW_SQL.saveBucket);
  for (const [name, b] of pick.buckets) save.run(name, b.tokens, b.refilledAt);
  return pick.ids.map(Number);
}
