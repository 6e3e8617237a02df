/**
 * Alert rules' state on MySQL/MariaDB: one row per rule, moved by compare-and-set on its
 * episode. The guarded write and the read of the row it wrote share one transaction, so the
 * row handed back is the one this transition made. Of evaluators moving a rule from the same
 * episode at once, one lands: a second insert of the rule fails on its key (ER_DUP_ENTRY), a
 * second update waits for the row lock and then matches no row.
 */
import type { AlertStateRow, AlertStore, AlertTransition } from '../../core/storage.js';
import { type Db, exec, isDuplicate, run } from './db.js';
import { NOW, type Row, type Tables, parseUtc } from './sql.js';
import { SqlAggregate } from '../aggregates.js';

const COLS = 'rule, state, episode, since, value, updated_at';

export function alertsSql(t: Tables) {
  return {
    listAlerts: `-- leasehold listAlerts: every rule's state, by rule name
      SELECT ${COLS} FROM ${t.alerts} ORDER BY rule`,
    createAlert: `-- leasehold createAlert: a rule's first transition (episode 0 -> 1); fails on the key when a row is already there
      INSERT INTO ${t.alerts} (rule, state, episode, since, value, updated_at) VALUES (?, ?, 1, ${NOW}, ?, ${NOW})`,
    moveAlert: `-- leasehold moveAlert: a rule's transition, only while it is still at this episode
      UPDATE ${t.alerts} SET state = ?, episode = episode + 1, since = ${NOW}, value = ?, updated_at = ${NOW}
      WHERE rule = ? AND episode = ?`,
    alertByRule: `-- leasehold alertByRule: one rule's state (read in the transaction that just moved it)
      SELECT ${COLS} FROM ${t.alerts} WHERE rule = ?`,
  };
}

const toAlertRow = (r: Row): AlertStateRow => ({
  rule: String(r.rule), state: String(r.state) as AlertStateRow['state'], episode: Number(r.episode), since: parseUtc(r.since),
  value: r.value == null ? null : Number(r.value), updatedAt: parseUtc(r.updated_at),
});

export class MysqlAlerts extends SqlAggregate<Db, ReturnType<typeof alertsSql>> implements AlertStore {
  constructor(db: Db) {
    super(db, alertsSql(db.t));
  }

  async list(): Promise<AlertStateRow[]> {
    return (await this.db.one('listAlerts', (c) => run(c, this.sql.listAlerts))).map(toAlertRow);
  }

  transition(p: AlertTransition): Promise<AlertStateRow | null> {
    return this.db.tx('transitionAlert', async (c) => {
      try {
        const moved = p.episode === 0
          ? await exec(c, this.sql.createAlert, [p.rule, p.state, p.value])
          : await exec(c, this.sql.moveAlert, [p.state, p.value, p.rule, p.episode]);
        if (moved.affectedRows === 0) return null;
      } catch (e) {
        // another evaluator created the rule first: the row is theirs
        if (p.episode === 0 && isDuplicate(e)) return null;
        throw e;
      }
      const [row] = await run(c, this.sql.alertByRule, [p.rule]);
      return row ? toAlertRow(row) : null;
    });
  }
}
