/** Alert rules' state in memory: one row per rule, moved by compare-and-set on its episode. */
import type { AlertStateRow, AlertStore, AlertTransition } from '../../core/storage.js';
import { alertOut, type MemoryDb } from './db.js';

export class MemoryAlerts implements AlertStore {
  constructor(private readonly db: MemoryDb) {}

  /** By rule name. */
  async list(): Promise<AlertStateRow[]> {
    this.db.now();
    return [...this.db.alerts.values()].sort((a, b) => (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0)).map(alertOut);
  }

  /** Lands only while the rule is still at `episode` (0: no row yet); else null. */
  async transition(p: AlertTransition): Promise<AlertStateRow | null> {
    const now = this.db.now();
    const cur = this.db.alerts.get(p.rule);
    if ((cur?.episode ?? 0) !== p.episode) return null;
    const row: AlertStateRow = { rule: p.rule, state: p.state, episode: p.episode + 1, since: now, value: p.value, updatedAt: now };
    this.db.alerts.set(p.rule, row);
    return alertOut(row);
  }
}
