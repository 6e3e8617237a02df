/**
 * What `leasehold doctor` asks of MySQL/MariaDB: the indexes the migrations create against
 * information_schema, table sizes from InnoDB's statistics (estimates: an exact count reads the
 * whole table), and the settings a guarantee depends on as our sessions see them (binary log
 * format, isolation level, log flushing, read-only). Also what a prune would delete.
 */
import { declaredIndexes } from '../../core/schema-indexes.js';
import type { DiagnosticsStore, PrunableQuery, SettingFact, StorageFacts } from '../../core/storage.js';
import { type Db, run } from './db.js';
import { MIGRATIONS } from './migrations.js';
import { NOW, type Tables, micros } from './sql.js';
import { SqlAggregate } from '../aggregates.js';
import { notHeld } from './workflows.js';

/**
 * Variables read with SHOW VARIABLES (this session's values); MariaDB before 11.1 names the
 * isolation level tx_isolation, reported under MySQL's name.
 */
const VARIABLES = ['log_bin', 'binlog_format', 'transaction_isolation', 'tx_isolation', 'innodb_flush_log_at_trx_commit', 'read_only'];

function diagnosticsSql(t: Tables) {
  return {
    indexes: `-- leasehold diagnostics.indexes: the index names the database holds on our tables
      SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name IN (?)`,
    tables: `-- leasehold diagnostics.tables: our tables with InnoDB's row estimate and their size, indexes included
      SELECT table_name AS name, table_rows AS n, data_length + index_length AS bytes
      FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?) ORDER BY table_name`,
    variables: `-- leasehold diagnostics.variables: settings a guarantee depends on, as this session sees them
      SHOW VARIABLES WHERE Variable_name IN (?)`,
    prunable: `-- leasehold diagnostics.prunable: how many finished jobs of the listed statuses are past retention (what pruneCandidates would pick, without its limit)
      SELECT COUNT(*) AS n FROM ${t.jobs} WHERE status IN (?) AND finished_at < ${NOW} - INTERVAL ? MICROSECOND AND ${notHeld(t, t.jobs)}`,
  };
}

export class MysqlDiagnostics extends SqlAggregate<Db, ReturnType<typeof diagnosticsSql>> implements DiagnosticsStore {
  constructor(db: Db) {
    super(db, diagnosticsSql(db.t));
  }

  async inspect(): Promise<StorageFacts> {
    const ours = Object.values(this.db.t);
    const [catalogue, tables, variables] = await this.db.one('diagnostics', (c) =>
      Promise.all([run(c, this.sql.indexes, [ours]), run(c, this.sql.tables, [ours]), run(c, this.sql.variables, [VARIABLES])]),
    );
    const present = new Set(catalogue.map((r) => String(r.name)));
    const declared = declaredIndexes(MIGRATIONS.flatMap((m) => m.sql.map((s) => s.replaceAll('{p}', this.db.prefix))));
    const vars = new Map(variables.map((r) => [String(r.Variable_name).toLowerCase(), String(r.Value)]));
    const settings: SettingFact[] = ['log_bin', 'binlog_format', 'innodb_flush_log_at_trx_commit', 'read_only'].map((name) => ({ name: `mysql.${name}`, value: vars.get(name) ?? null }));
    settings.push({ name: 'mysql.transaction_isolation', value: vars.get('transaction_isolation') ?? vars.get('tx_isolation') ?? null });
    return {
      indexes: declared.map((i) => ({ ...i, state: present.has(i.name) ? 'present' : 'missing' })),
      tables: tables.map((r) => ({ name: String(r.name), rows: r.n === null ? null : Number(r.n), bytes: r.bytes === null ? null : Number(r.bytes), estimated: true })),
      databaseBytes: null,
      settings,
    };
  }

  async prunable(p: PrunableQuery): Promise<number> {
    if (p.statuses.length === 0) return 0;
    const [row] = await this.db.one('diagnostics.prunable', (c) => run(c, this.sql.prunable, [p.statuses, micros(p.olderThanMs)]));
    return Number(row?.n ?? 0);
  }
}
