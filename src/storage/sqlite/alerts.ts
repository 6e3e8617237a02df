/**
 * Alert rules' state on SQLite: one row per rule, moved by compare-and-set on its episode.
 * Each transition is one statement in autocommit: it takes the write lock at its start, so of
 * two evaluators moving a rule from the same episode exactly one lands.
 */
import type { AlertStateRow, AlertStore, AlertTransition } from '../../core/storage.js';
import type { SqliteDb } from './db.js';

const ALERT_SQL = {
  list: `-- leasehold alerts.list: every rule's state, by rule name
    SELECT * FROM {p}alert_states ORDER BY rule`,
  create: `-- leasehold alerts.create: a rule's first transition (episode 0 → 1); a row already there wins and nothing is written
    INSERT INTO {p}alert_states (rule, state, episode, since, value, updated_at)
    VALUES (@rule, @state, 1, @now, @value, @now)
    ON CONFLICT (rule) DO NOTHING
    RETURNING *`,
  move: `-- leasehold alerts.move: a rule's transition, only while it is still at @episode
    UPDATE {p}alert_states SET state = @state, episode = episode + 1, since = @now, value = @value, updated_at = @now
    WHERE rule = @rule AND episode = @episode
    RETURNING *`,
} as const;

interface SqlAlert { rule: string; state: 'ok' | 'firing'; episode: number; since: number; value: number | null; updated_at: number }

const toAlertRow = (r: SqlAlert): AlertStateRow => ({
  rule: r.rule, state: r.state, episode: r.episode, since: new Date(r.since), value: r.value, updatedAt: new Date(r.updated_at),
});

export class SqliteAlerts implements AlertStore {
  constructor(private readonly db: SqliteDb) {}

  async list(): Promise<AlertStateRow[]> {
    return this.db.read(() => this.db.stmt(ALERT_SQL.list).all() as SqlAlert[]).map(toAlertRow);
  }

  async transition(p: AlertTransition): Promise<AlertStateRow | null> {
    const now = this.db.now();
    const params = { rule: p.rule, state: p.state, value: p.value, now };
    const row = this.db.read(() =>
      (p.episode === 0 ? this.db.stmt(ALERT_SQL.create).get(params) : this.db.stmt(ALERT_SQL.move).get({ ...params, episode: p.episode })) as SqlAlert | undefined,
    );
    return row ? toAlertRow(row) : null;
  }
}
