/**
 * What `leasehold doctor` asks of PostgreSQL: the indexes the migrations create against the
 * schema's catalogue (an index left invalid by an interrupted CREATE INDEX CONCURRENTLY counts
 * as unusable), table sizes from the planner's statistics (no full count), the settings a
 * guarantee depends on, and whether this is a standby. Also what a prune would delete.
 */
import { declaredIndexes } from '../../core/schema-indexes.js';
import type { DiagnosticsStore, IndexFact, PrunableQuery, StorageFacts } from '../../core/storage.js';
import { type Db } from './db.js';
import { MIGRATIONS } from './migrations.js';
import { NOW, ms } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { notHeld } from './workflows.js';

/** Settings read from pg_settings; the rules that judge them are in core/doctor-settings.ts. */
const SETTINGS = ['fsync', 'synchronous_commit', 'full_page_writes', 'default_transaction_isolation', 'default_transaction_read_only'];

function diagnosticsSql(s: string) {
  return {
    /** $1 schema name */
    indexes: `-- leasehold diagnostics.indexes: every index on the schema's tables, and whether the planner may use it
SELECT c.relname AS name, i.indisvalid AS valid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1::text`,

    /** $1 schema name */
    tables: `-- leasehold diagnostics.tables: the schema's tables with the planner's row estimate (the statistics collector's before a first analyze) and their size on disk, indexes and TOAST included
SELECT c.relname AS name, CASE WHEN c.reltuples >= 0 THEN c.reltuples::float8 ELSE st.n_live_tup::float8 END AS rows,
       pg_total_relation_size(c.oid)::float8 AS bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
WHERE n.nspname = $1::text AND c.relkind IN ('r', 'p') ORDER BY c.relname`,

    /** $1 setting names */
    settings: `-- leasehold diagnostics.settings: settings a guarantee depends on, as this session sees them, and whether the server is a standby
SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])
UNION ALL SELECT 'in_recovery', CASE WHEN pg_is_in_recovery() THEN 'on' ELSE 'off' END`,

    /** $1 statuses, $2 age in ms */
    prunable: `-- leasehold diagnostics.prunable: how many finished jobs of the listed statuses finished more than $2 ms ago (what pruneJobs would delete, without its limit)
SELECT count(*)::float8 AS n FROM ${s}.jobs v WHERE finished_at < ${NOW} - ${ms('$2::float8')} AND status = ANY($1::text[]) AND ${notHeld(s, 'v')}`,
  };
}

export class PostgresDiagnostics extends SqlAggregate<Db, ReturnType<typeof diagnosticsSql>> implements DiagnosticsStore {
  constructor(db: Db) {
    super(db, diagnosticsSql(db.q));
  }

  async inspect(): Promise<StorageFacts> {
    const [catalogue, tables, settings] = await Promise.all([
      this.db.run('diagnostics.indexes', this.sql.indexes, [this.db.schema]),
      this.db.run('diagnostics.tables', this.sql.tables, [this.db.schema]),
      this.db.run('diagnostics.settings', this.sql.settings, [SETTINGS]),
    ]);
    const valid = new Map(catalogue.map((r) => [String(r.name), r.valid === true]));
    const state = (name: string): IndexFact['state'] => (!valid.has(name) ? 'missing' : valid.get(name) ? 'present' : 'invalid');
    return {
      indexes: declaredIndexes(MIGRATIONS.map((m) => m.sql(this.db.q))).map((i) => ({ ...i, state: state(i.name) })),
      tables: tables.map((r) => {
        const rows = r.rows === null ? -1 : Number(r.rows);
        return { name: String(r.name), rows: rows < 0 ? null : Math.round(rows), bytes: Number(r.bytes), estimated: true };
      }),
      databaseBytes: null,
      settings: settings.map((r) => ({ name: `postgres.${String(r.name)}`, value: r.setting === null ? null : String(r.setting) })),
    };
  }

  async prunable(p: PrunableQuery): Promise<number> {
    if (p.statuses.length === 0) return 0;
    const [row] = await this.db.run('diagnostics.prunable', this.sql.prunable, [[...p.statuses], p.olderThanMs]);
    return Number(row?.n ?? 0);
  }
}
