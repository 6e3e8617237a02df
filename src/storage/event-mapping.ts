/**
 * Job events between the SQL adapters and the contract: the detail as every dialect stores it
 * (a JSON object; ids and counts may come back as numbers or text) and the row as read back.
 */
import type { JobStatus } from '../core/status.js';
import type { JobEvent, JobEventDetail, JobEventKind } from '../core/storage.js';

/** What a change writes into an event's detail: the job before it, and the bulk action it belongs to. */
export function eventDetail(before: { status: JobStatus; attempts: number }, lastAttemptId: string | null, bulkId: string | null): JobEventDetail {
  return { status: before.status, attempts: before.attempts, lastAttemptId, ...(bulkId !== null ? { bulkId } : {}) };
}

/** A detail as stored (parsed JSON), in the contract's shape: a null bulkId is left out. */
export function toEventDetail(v: unknown): JobEventDetail {
  const d = (typeof v === 'string' ? JSON.parse(v) : v) as Record<string, unknown>;
  const last = d.lastAttemptId;
  return eventDetail(
    { status: d.status as JobStatus, attempts: Number(d.attempts) },
    last === null || last === undefined ? null : String(last),
    d.bulkId === null || d.bulkId === undefined ? null : String(d.bulkId),
  );
}

/** An event row (id, job_id, at, kind, actor, source, detail) with the adapter's time decoder. */
export function toJobEvent(r: Record<string, unknown>, date: (v: unknown) => Date): JobEvent {
  return {
    id: String(r.id),
    jobId: String(r.job_id),
    at: date(r.at),
    kind: r.kind as JobEventKind,
    actor: String(r.actor),
    source: r.source === null || r.source === undefined ? null : String(r.source),
    detail: toEventDetail(r.detail),
  };
}
