/**
 * Job events on MySQL/MariaDB: an operator's change to a job, recorded in the change's READ
 * COMMITTED transaction after the change, while the job's row lock is held: the job's last
 * attempt row it names is read as committed then, and no other attempt of the job can be
 * written until the change commits (every attempt write locks its job row first).
 */
import { EVENTS_LIMIT } from '../../core/operator.js';
import type { JobEvent, JobEventKind } from '../../core/storage.js';
import type { JobStatus } from '../../core/status.js';
import { toJobEvent } from '../event-mapping.js';
import { SqlAggregate } from '../aggregates.js';
import { type Db, type Stmt, run } from './db.js';
import { NOW, type Tables, idParam, parseUtc } from './sql.js';

/** One event: job id, kind, actor, source, status and attempts before, job id (for its last attempt), bulk id. */
const EVENT_ROW = `(?, ${NOW}, ?, ?, ?, JSON_OBJECT('status', ?, 'attempts', ?, 'lastAttemptId', (SELECT CAST(MAX(a.id) AS CHAR) FROM {attempts} a WHERE a.job_id = ?), 'bulkId', ?))`;

export function eventsSql(t: Tables) {
  return {
    recordEvents: (n: number): string => `-- leasehold recordEvents: ${n} job event(s), each naming its job's last attempt row as the change left it
      INSERT INTO ${t.events} (job_id, at, kind, actor, source, detail)
      VALUES ${Array<string>(n).fill(EVENT_ROW.replace('{attempts}', t.attempts)).join(', ')}`,
    listEvents: `-- leasehold listEvents: a job's events, oldest first
      SELECT id, job_id, at, kind, actor, source, detail FROM ${t.events} WHERE job_id = ? ORDER BY id LIMIT ?`,
  };
}

export type EventsSql = ReturnType<typeof eventsSql>;

/** A job a change applied to, as it was before. */
export interface Changed {
  id: bigint;
  was: JobStatus;
  wasAttempts: number;
}

/** Who asked for a change, as recorded. */
export interface Recording {
  actor: string;
  source: string | null;
  bulkId: string | null;
}

/** The statement recording `kind` for every changed job (null when none changed); run after the change, in its transaction. */
export function eventStatement(sql: EventsSql, kind: JobEventKind, changed: readonly Changed[], r: Recording): Stmt | null {
  if (changed.length === 0) return null;
  return {
    sql: sql.recordEvents(changed.length),
    values: changed.flatMap((x) => [x.id, kind, r.actor, r.source, x.was, x.wasAttempts, x.id, r.bulkId]),
  };
}

export class MysqlEvents extends SqlAggregate<Db, EventsSql> {
  constructor(db: Db) {
    super(db, eventsSql(db.t));
  }

  async list(p: { jobId: string; limit?: number | undefined }): Promise<JobEvent[]> {
    const id = idParam(p.jobId);
    const limit = p.limit ?? EVENTS_LIMIT;
    if (id === null || limit <= 0) return [];
    return (await this.db.one('listEvents', (c) => run(c, this.sql.listEvents, [id, limit]))).map((r) => toJobEvent(r, parseUtc));
  }
}
