/** Results and progress on PostgreSQL: the job row's workflow columns and the fenced progress write. */
import type { ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type Db } from './db.js';
import { NOW, validId } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key). */
export const WORKFLOW_JOB_COLUMNS = `,
  result           json,
  progress         json,
  progress_note    text,
  progress_at      timestamptz(3)`;

function workflowsSql(s: string) {
  return {
    /** $1 id, $2 token, $3 value (JSON text), $4 note */
    progress: `-- leasehold progress: record a running attempt's progress, only under its lease (id + token + running)
UPDATE ${s}.jobs SET progress = $3::json, progress_note = $4::text, progress_at = ${NOW}, updated_at = ${NOW}
WHERE id = $1::bigint AND lease_token = $2::text AND status = 'running'
RETURNING 1 AS landed`,
  };
}

export class PostgresWorkflows extends SqlAggregate<Db, ReturnType<typeof workflowsSql>> implements WorkflowStore {
  constructor(db: Db) {
    super(db, workflowsSql(db.q));
  }

  async progress(p: ProgressParams): Promise<boolean> {
    const id = validId(p.id);
    if (id === null) return false;
    return (await this.db.run('progress', this.sql.progress, [id, p.leaseToken, p.value, p.note])).length > 0;
  }
}
