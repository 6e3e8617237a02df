/**
 * Alert rules' state on PostgreSQL: one row per rule, moved by compare-and-set on its episode,
 * each transition one statement. Of evaluators moving a rule from the same episode at once,
 * one lands: a second insert waits on the first's key and does nothing; a second update waits
 * on the row lock and finds the episode moved.
 */
import type { AlertStateRow, AlertStore, AlertTransition } from '../../core/storage.js';
import { type Db, type Row } from './db.js';
import { NOW, date } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

const COLUMNS = 'rule, state, episode, since, value, updated_at';

function alertsSql(s: string) {
  return {
    list: `-- leasehold alerts.list: every rule's state, by rule name
SELECT ${COLUMNS} FROM ${s}.alert_states ORDER BY rule`,

    /** $1 rule, $2 state, $3 value */
    create: `-- leasehold alerts.create: a rule's first transition (episode 0 -> 1); a row already there wins and nothing is written
INSERT INTO ${s}.alert_states (rule, state, episode, since, value, updated_at)
VALUES ($1::text, $2::text, 1, ${NOW}, $3::float8, ${NOW})
ON CONFLICT (rule) DO NOTHING
RETURNING ${COLUMNS}`,

    /** $1 rule, $2 state, $3 value, $4 the episode it must still be at */
    move: `-- leasehold alerts.move: a rule's transition, only while it is still at episode $4
UPDATE ${s}.alert_states
SET state = $2::text, episode = episode + 1, since = ${NOW}, value = $3::float8, updated_at = ${NOW}
WHERE rule = $1::text AND episode = $4::int
RETURNING ${COLUMNS}`,
  };
}

const toAlertRow = (r: Row): AlertStateRow => ({
  rule: String(r.rule), state: r.state as AlertStateRow['state'], episode: Number(r.episode), since: date(r.since),
  value: r.value == null ? null : Number(r.value), updatedAt: date(r.updated_at),
});

export class PostgresAlerts extends SqlAggregate<Db, ReturnType<typeof alertsSql>> implements AlertStore {
  constructor(db: Db) {
    super(db, alertsSql(db.q));
  }

  async list(): Promise<AlertStateRow[]> {
    return (await this.db.run('listAlerts', this.sql.list)).map(toAlertRow);
  }

  async transition(p: AlertTransition): Promise<AlertStateRow | null> {
    const [row] = p.episode === 0
      ? await this.db.run('transitionAlert', this.sql.create, [p.rule, p.state, p.value])
      : await this.db.run('transitionAlert', this.sql.move, [p.rule, p.state, p.value, p.episode]);
    return row ? toAlertRow(row) : null;
  }
}
