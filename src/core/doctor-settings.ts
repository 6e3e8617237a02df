/**
 * Which database settings break a leasehold guarantee, and what to do about each: rules keyed
 * by the setting's name as the diagnostics aggregate reports it (`<database>.<setting>`). A
 * setting without a rule, or with a value its rule accepts, says nothing.
 */
import type { SettingFact } from './storage-diagnostics.js';

export interface SettingVerdict {
  severity: 'info' | 'warning' | 'error';
  summary: string;
  fix: string;
}

type Rule = (value: string, all: ReadonlyMap<string, string | null>) => SettingVerdict | null;

/** Filesystems whose file locking SQLite cannot trust (its own docs warn against them). */
const NETWORK_FS = /^(nfs4?|cifs|smb[23]?|smbfs|ncpfs|afs|9p|ceph|glusterfs|lustre|gpfs|davfs|fuse\.(sshfs|s3fs|gcsfuse|rclone|glusterfs|cephfs))$/i;

const on = (v: string): boolean => /^(on|1|true|yes)$/i.test(v);

const RULES: Record<string, Rule> = {
  'sqlite.journal_mode': (v) =>
    v.toLowerCase() === 'wal'
      ? null
      : {
          severity: 'warning',
          summary: `journal_mode is ${v}, not WAL: every read blocks writers and every write blocks readers, so claims stall behind dashboards and CLI reads`,
          fix: 'leasehold switches a file to WAL when it opens it; a file that stays out of WAL is read-only to it, on a filesystem without shared memory, or switched back by another program: move it to a local disk and run `sqlite3 FILE "PRAGMA journal_mode=WAL"`',
        },
  'sqlite.filesystem': (v) =>
    NETWORK_FS.test(v)
      ? {
          severity: 'error',
          summary: `the database file is on a network filesystem (${v}): its locks are not reliable, so two processes can claim the same job or corrupt the file`,
          fix: 'keep the SQLite file on a local disk of the one host that runs the workers, or move to PostgreSQL or MySQL/MariaDB for several hosts',
        }
      : null,
  'postgres.fsync': (v) =>
    on(v) ? null : { severity: 'error', summary: 'fsync is off: a server crash can lose committed jobs and outcomes or corrupt the database', fix: 'set fsync = on in postgresql.conf and reload' },
  'postgres.synchronous_commit': (v) =>
    v.toLowerCase() === 'off'
      ? {
          severity: 'warning',
          summary: 'synchronous_commit is off: the last commits before a server crash are lost, so a finished job can run again and a ctx.once effect be repeated',
          fix: 'set synchronous_commit = on (for leasehold\'s role: ALTER ROLE … SET synchronous_commit = on)',
        }
      : null,
  'postgres.full_page_writes': (v) =>
    on(v) ? null : { severity: 'warning', summary: 'full_page_writes is off: a crash during a page write can leave torn pages', fix: 'set full_page_writes = on unless the storage guarantees atomic page writes' },
  'postgres.default_transaction_isolation': (v) =>
    // PostgreSQL runs read uncommitted as read committed
    /read (un)?committed/i.test(v)
      ? null
      : {
          severity: 'warning',
          summary: `default_transaction_isolation is ${v}: concurrent claims and finishes fail with serialization errors and are retried, so throughput drops under load`,
          fix: 'leave leasehold\'s role at READ COMMITTED: ALTER ROLE … SET default_transaction_isolation = \'read committed\'',
        },
  'postgres.default_transaction_read_only': (v) =>
    on(v) ? { severity: 'error', summary: 'transactions are read-only by default: every enqueue, claim and finish fails', fix: 'connect to the primary, or set default_transaction_read_only = off for leasehold\'s role' } : null,
  'postgres.in_recovery': (v) =>
    on(v) ? { severity: 'error', summary: 'this server is a standby in recovery: it refuses every write', fix: 'point --db at the primary' } : null,
  'mysql.binlog_format': (v, all) =>
    v.toUpperCase() === 'STATEMENT' && on(all.get('mysql.log_bin') ?? 'OFF')
      ? {
          severity: 'error',
          summary: 'binary logging is statement-based: claims (LIMIT … SKIP LOCKED) are unsafe to replay, so replicas drift, and READ COMMITTED prunes are refused',
          fix: 'set binlog_format = ROW (MySQL\'s default) or MIXED in the server\'s configuration',
        }
      : null,
  'mysql.transaction_isolation': (v) => {
    const level = v.toUpperCase().replace(/[\s_]/g, '-');
    if (level === 'READ-UNCOMMITTED') {
      return { severity: 'error', summary: 'transaction_isolation is READ-UNCOMMITTED: a read can see a claim or an effect that is then rolled back', fix: 'set transaction_isolation = REPEATABLE-READ (the default) or READ-COMMITTED' };
    }
    if (level === 'SERIALIZABLE') {
      return { severity: 'warning', summary: 'transaction_isolation is SERIALIZABLE: every read takes locks, so claims wait on one another and deadlock more', fix: 'set transaction_isolation = REPEATABLE-READ (the default) or READ-COMMITTED' };
    }
    return null;
  },
  'mysql.innodb_flush_log_at_trx_commit': (v) =>
    v === '1'
      ? null
      : {
          severity: 'warning',
          summary: `innodb_flush_log_at_trx_commit is ${v}: the last second of commits can be lost in a crash, so a finished job can run again and a ctx.once effect be repeated`,
          fix: 'set innodb_flush_log_at_trx_commit = 1 (the default)',
        },
  'mysql.read_only': (v) =>
    on(v) ? { severity: 'warning', summary: 'the server is read-only (a replica?): writes of users without the privilege to bypass it fail', fix: 'point --db at the primary' } : null,
};

/** The settings that break something, with the rule's verdict. */
export function judgeSettings(settings: readonly SettingFact[]): (SettingVerdict & { setting: SettingFact })[] {
  const all = new Map(settings.map((s) => [s.name, s.value]));
  const out: (SettingVerdict & { setting: SettingFact })[] = [];
  for (const s of settings) {
    const rule = RULES[s.name];
    const verdict = rule && s.value !== null ? rule(s.value, all) : null;
    if (verdict) out.push({ ...verdict, setting: s });
  }
  return out;
}
