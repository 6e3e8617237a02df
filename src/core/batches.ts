/**
 * Batches: a group of jobs whose last one to end enqueues a callback job once. Pure: what the
 * callback is called and carries; adapters decide nothing else (storage-workflows.ts).
 */
import type { BatchRow } from './storage-workflows.js';

/** The callback's idempotency key: a second enqueue of it, from any path, finds the first. */
export const batchCallbackKey = (batchId: string): string => `leasehold:batch:${batchId}`;

/** The batches pruning these jobs may leave empty: their members' batches and those whose callbacks they were. */
export function batchesOf(jobs: readonly { batchId?: string | null | undefined; idempotencyKey?: string | null | undefined }[]): string[] {
  const ids = new Set<string>();
  for (const j of jobs) {
    if (j.batchId != null) ids.add(String(j.batchId));
    const m = /^leasehold:batch:([0-9]+)$/.exec(j.idempotencyKey ?? '');
    if (m) ids.add(m[1]!);
  }
  return [...ids];
}

/** The counts a callback's payload carries as `batch`. */
export type BatchCounts = Pick<BatchRow, 'id' | 'total' | 'succeeded' | 'dead' | 'cancelled'>;

/** The callback's payload: the spec's JSON object plus `batch` with the counts. */
export function batchCallbackPayload(payload: unknown, b: BatchCounts): Record<string, unknown> {
  const base = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : {};
  return { ...base, batch: { id: b.id, total: b.total, succeeded: b.succeeded, dead: b.dead, cancelled: b.cancelled } };
}

/** Whether a batch that is done enqueues its callback: always, or with onSuccessOnly only when every member succeeded. */
export const batchFires = (b: Pick<BatchRow, 'onSuccessOnly' | 'total' | 'succeeded'>): boolean => !b.onSuccessOnly || b.succeeded === b.total;
