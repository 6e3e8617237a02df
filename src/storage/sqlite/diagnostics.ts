/**
 * What `leasehold doctor` asks of SQLite: the indexes the migrations create against those the
 * file holds, exact row counts (SQLite keeps no estimate; a count reads the smallest index),
 * the file's size, the journal mode, and the filesystem the file lives on (from /proc/mounts:
 * SQLite's locks cannot be trusted on a network filesystem). Also what a prune would delete.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { declaredIndexes } from '../../core/schema-indexes.js';
import type { DiagnosticsStore, IndexFact, PrunableQuery, SettingFact, StorageFacts, TableFact } from '../../core/storage.js';
import type { SqliteDb } from './db.js';
import { MIGRATIONS } from './migrations.js';
import { withPrefix } from './sql.js';
import { notHeld } from './workflows.js';

const DIAG_SQL = {
  indexes: `-- leasehold diagnostics.indexes: the indexes the file holds on this prefix's tables
    SELECT name FROM sqlite_master WHERE type = 'index' AND substr(tbl_name, 1, @n) = @prefix`,
  tables: `-- leasehold diagnostics.tables: this prefix's tables, by name
    SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, @n) = @prefix ORDER BY name`,
  prunable: `-- leasehold diagnostics.prunable: how many finished jobs of the listed statuses are older than @cutoff (what jobs.prune would delete, without its limit)
    SELECT count(*) AS n FROM {p}jobs
    WHERE finished_at < @cutoff AND status IN (SELECT value FROM json_each(@statuses)) AND ${notHeld('{p}jobs')}`,
} as const;

/** `SELECT count(*)` of one of our tables (a name read from sqlite_master under our prefix, quoted). */
const countSql = (table: string): string => `-- leasehold diagnostics.rows: exact row count of one table
    SELECT count(*) AS n FROM "${table.replaceAll('"', '""')}"`;

/** /proc/mounts' octal escapes (a space is \040). */
const unescapeMount = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The filesystem type and mount point holding `file`: the longest mount point above it. Null off Linux. */
export function filesystemOf(file: string, mounts = '/proc/mounts'): { type: string; mountPoint: string } | null {
  let text: string;
  let real: string;
  try {
    text = readFileSync(mounts, 'utf8');
    real = realpathSync(file);
  } catch {
    return null;
  }
  let best: { type: string; mountPoint: string } | null = null;
  for (const line of text.split('\n')) {
    const [, mp, type] = line.split(' ');
    if (!mp || !type) continue;
    const mountPoint = unescapeMount(mp);
    const under = mountPoint === '/' || real === mountPoint || real.startsWith(`${mountPoint}/`);
    // the last of equal mount points is the one on top
    if (under && (!best || mountPoint.length >= best.mountPoint.length)) best = { type, mountPoint };
  }
  return best;
}

export class SqliteDiagnostics implements DiagnosticsStore {
  constructor(private readonly db: SqliteDb) {}

  async inspect(): Promise<StorageFacts> {
    const db = this.db;
    const scope = { n: db.prefix.length, prefix: db.prefix };
    return db.read(() => {
      const present = new Set((db.stmt(DIAG_SQL.indexes).all(scope) as { name: string }[]).map((r) => r.name));
      const indexes: IndexFact[] = declaredIndexes(MIGRATIONS.map((m) => withPrefix(m.sql, db.prefix))).map((i) => ({ ...i, state: present.has(i.name) ? 'present' : 'missing' }));
      const names = (db.stmt(DIAG_SQL.tables).all(scope) as { name: string }[]).map((r) => r.name);
      const tables: TableFact[] = names.map((name) => ({ name, rows: (db.stmt(countSql(name)).get() as { n: number }).n, bytes: null, estimated: false }));
      const pragma = (body: string): unknown => Object.values((db.conn.pragma(body)[0] ?? {}) as Record<string, unknown>)[0];
      const pages = Number(pragma('page_count')) * Number(pragma('page_size'));
      const file = (db.conn.pragma('database_list') as { name: string; file: string }[]).find((d) => d.name === 'main')?.file ?? '';
      const settings: SettingFact[] = [{ name: 'sqlite.journal_mode', value: String(pragma('journal_mode')) }];
      // '' is a temporary or in-memory database: no file, no filesystem
      if (file !== '') {
        const fs = filesystemOf(file);
        settings.push({ name: 'sqlite.filesystem', value: fs?.type ?? null, detail: fs ? `${file} on ${fs.mountPoint}` : file });
      }
      return { indexes, tables, databaseBytes: Number.isFinite(pages) ? pages : null, settings };
    });
  }

  async prunable(p: PrunableQuery): Promise<number> {
    if (p.statuses.length === 0) return 0;
    const cutoff = this.db.now() - p.olderThanMs;
    return this.db.read(() => (this.db.stmt(DIAG_SQL.prunable).get({ cutoff, statuses: JSON.stringify(p.statuses) }) as { n: number }).n);
  }
}
