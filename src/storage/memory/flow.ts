/**
 * The claim of one limited type in memory: core/flow.ts's plan over the due jobs, its reads
 * answered from the tables. The whole claim is one synchronous step, which is the per-type
 * serialisation the SQL adapters get from a row lock.
 */
import { type TypeFlow, bucketName, flowPlan, runFlowPlan } from '../../core/flow.js';
import type { MemoryDb, StoredJob } from './db.js';

/** The jobs of one limited type its flow plan picks from `due` (in claim order); the buckets it used are written back. */
export function flowPick(db: MemoryDb, type: string, flow: TypeFlow, due: StoredJob[], nowMs: number, limit: number): StoredJob[] {
  if (limit <= 0) return [];
  const runningByKey = new Map<string, number>();
  let running = 0;
  for (const j of db.jobs.values()) {
    if (j.type !== type || j.status !== 'running') continue;
    running++;
    if (j.concurrencyKey !== undefined) runningByKey.set(j.concurrencyKey, (runningByKey.get(j.concurrencyKey) ?? 0) + 1);
  }
  const rate = flow.rate;
  const pick = runFlowPlan(flowPlan(type, flow, { running, runningByKey, typeBucket: db.buckets.get(type) }, nowMs, limit), (q) =>
    due
      .filter((j) => !q.excludeIds.includes(j.id) && (j.concurrencyKey === undefined || !q.excludeKeys.includes(j.concurrencyKey)))
      .slice(0, q.window)
      .map((j) => ({ id: j.id, key: j.concurrencyKey ?? null, bucket: rate?.perKey ? db.buckets.get(bucketName(type, j.concurrencyKey ?? null, rate)) : undefined })),
  );
  for (const [name, b] of pick.buckets) db.buckets.set(name, b);
  const ids = new Set(pick.ids);
  return due.filter((j) => ids.has(j.id));
}
