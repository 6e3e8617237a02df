/**
 * The claim of one limited group in memory (core/flow-groups.ts): core/flow.ts's plan over the
 * group's due jobs, its reads answered from the tables. The whole claim is one synchronous step,
 * which is the serialisation the SQL adapters get from row locks.
 */
import { flowPlan, runFlowPlan } from '../../core/flow.js';
import { type FlowGroup, type RunningCount, keyBucketNames, runningFilter, scopeStates } from '../../core/flow-groups.js';
import type { MemoryDb, StoredJob } from './db.js';

/** The jobs of one limited group its flow plan picks from `due` (the group's due jobs in claim order); the buckets it used are written back. */
export function flowPick(db: MemoryDb, group: FlowGroup, due: StoredJob[], nowMs: number, limit: number): StoredJob[] {
  if (limit <= 0) return [];
  const scope = runningFilter(group);
  const running: RunningCount[] = [];
  for (const j of db.jobs.values()) {
    if (j.status !== 'running' || !(scope.types.includes(j.type) || scope.queues.includes(j.queue))) continue;
    running.push({ type: j.type, queue: j.queue, key: j.concurrencyKey ?? null, n: 1 });
  }
  const states = scopeStates(group.scopes, running, db.buckets);
  const pick = runFlowPlan(flowPlan(group.scopes, states, nowMs, limit), (q) => {
    const rows = due
      .filter((j) => {
        if (q.excludeIds.includes(j.id) || q.excludeTypes.includes(j.type)) return false;
        const key = j.concurrencyKey;
        return key === undefined || !(q.excludeKeys.includes(key) || q.excludeTypeKeys.includes(`${j.type}|${key}`));
      })
      .slice(0, q.window)
      .map((j) => ({ id: j.id, type: j.type, queue: j.queue, key: j.concurrencyKey ?? null }));
    const names = keyBucketNames(group.scopes, rows);
    const buckets = new Map(names.flatMap((n) => (db.buckets.has(n) ? [[n, db.buckets.get(n)!] as const] : [])));
    return rows.map((r) => ({ ...r, buckets }));
  });
  for (const [name, b] of pick.buckets) db.buckets.set(name, b);
  const ids = new Set(pick.ids);
  return due.filter((j) => ids.has(j.id));
}
