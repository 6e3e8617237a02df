/**
 * Job events in memory: an operator's change to a job, written by the same synchronous step as
 * the change (operator.ts) once it applied, and read back for the job's history.
 */
import { EVENTS_LIMIT } from '../../core/operator.js';
import type { JobEvent, JobEventKind } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { eventDetail } from '../event-mapping.js';
import { copyDate, type MemoryDb } from './db.js';

/** Who asked for a change, as recorded. */
export interface Recording {
  actor: string;
  source: string | null;
  bulkId: string | null;
}

/** The job's last attempt row (claimed last), or null before any. */
function lastAttemptId(db: MemoryDb, jobId: string): string | null {
  let last: { seq: number; id: string } | null = null;
  for (const a of db.attempts.values()) if (a.jobId === jobId && (last === null || a.seq > last.seq)) last = a;
  return last === null ? null : last.id;
}

/** Write the event of a change that applied to job `jobId`, after the change's own writes. */
export function recordEvent(db: MemoryDb, jobId: string, at: Date, kind: JobEventKind, before: { status: JobStatus; attempts: number }, r: Recording): void {
  const seq = db.eventSeq();
  const detail = eventDetail(before, lastAttemptId(db, jobId), r.bulkId);
  db.events.set(String(seq), { seq, id: String(seq), jobId, at, kind, actor: r.actor, source: r.source, detail });
}

/** Drop a deleted job's events. */
export function forgetEvents(db: MemoryDb, jobId: string): void {
  for (const [id, e] of db.events) if (e.jobId === jobId) db.events.delete(id);
}

export class MemoryEvents {
  constructor(private readonly db: MemoryDb) {}

  async list(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    this.db.now();
    return [...this.db.events.values()]
      .filter((e) => e.jobId === p.jobId)
      .sort((a, b) => a.seq - b.seq)
      .slice(0, Math.max(0, p.limit ?? EVENTS_LIMIT))
      .map((e) => ({ id: e.id, jobId: e.jobId, at: copyDate(e.at), kind: e.kind, actor: e.actor, source: e.source, detail: { ...e.detail } }));
  }
}
