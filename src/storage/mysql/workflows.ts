/** Results and progress on MySQL/MariaDB: the job row's workflow columns, the finish's result write and the fenced progress write. */
import type { ProgressParams, WorkflowStore } from '../../core/storage.js';
import { type Db, type Stmt, exec } from './db.js';
import { NOW, type Tables, idParam } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

/** The jobs table's workflow columns, in the baseline migration's CREATE TABLE (after unique_key); JSON as text. */
export const WORKFLOW_JOB_COLUMNS = `
        result LONGTEXT NULL,
        progress TEXT NULL,
        progress_note TEXT NULL,
        progress_at DATETIME(6) NULL,`;

export function workflowsSql(t: Tables) {
  return {
    progress: `-- leasehold progress: record a running attempt's progress, only under its lease (id + token + running)
      UPDATE ${t.jobs} SET progress = ?, progress_note = ?, progress_at = ${NOW}, updated_at = ${NOW}
      WHERE id = ? AND lease_token = ? AND status = 'running'`,
    // run inside the finish's transaction, on rows its lock read found under the finishing leases
    results: `-- leasehold finishJobs: store the results of the succeeded jobs the finish landed
      UPDATE JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT UNSIGNED PATH '$.i', result LONGTEXT PATH '$.r')) AS v
        STRAIGHT_JOIN ${t.jobs} j FORCE INDEX (PRIMARY) ON j.id = v.id
      SET j.result = v.result`,
  };
}

/** The finish's statement storing the results of landed items (none: no statement). */
export function resultsStatement(sql: ReturnType<typeof workflowsSql>, landed: readonly { id: bigint; result: string | undefined }[]): Stmt[] {
  const items = landed.flatMap((l) => (l.result === undefined ? [] : [{ i: String(l.id), r: l.result }]));
  return items.length === 0 ? [] : [{ sql: sql.results, values: [JSON.stringify(items)] }];
}

export class MysqlWorkflows extends SqlAggregate<Db, ReturnType<typeof workflowsSql>> implements WorkflowStore {
  constructor(db: Db) {
    super(db, workflowsSql(db.t));
  }

  async progress(p: ProgressParams): Promise<boolean> {
    const id = idParam(p.id);
    if (id === null) return false;
    const r = await this.db.one('progress', (c) => exec(c, this.sql.progress, [p.value, p.note, id, p.leaseToken]));
    return r.affectedRows > 0;
  }
}
