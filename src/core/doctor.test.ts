import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DoctorFacts, diagnose, humanMs, verdict } from './doctor.js';
import { judgeSettings } from './doctor-settings.js';
import type { SettingFact } from './storage-diagnostics.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const base = (over: Partial<DoctorFacts> = {}): DoctorFacts => ({ dialect: 'x', schemaVersion: 1, expectedSchemaVersion: 1, ...over });
const judged = (settings: SettingFact[]) => judgeSettings(settings).map((j) => `${j.setting.name}:${j.severity}`);

describe('doctor: settings that break a guarantee', () => {
  it('MySQL/MariaDB: statement-based binary logging is an error only when the binary log is on', () => {
    assert.deepEqual(judged([{ name: 'mysql.log_bin', value: 'ON' }, { name: 'mysql.binlog_format', value: 'STATEMENT' }]), ['mysql.binlog_format:error']);
    assert.deepEqual(judged([{ name: 'mysql.log_bin', value: 'OFF' }, { name: 'mysql.binlog_format', value: 'STATEMENT' }]), []);
    assert.deepEqual(judged([{ name: 'mysql.log_bin', value: 'ON' }, { name: 'mysql.binlog_format', value: 'MIXED' }, { name: 'mysql.binlog_format', value: 'ROW' }]), []);
  });

  it('MySQL/MariaDB: READ-UNCOMMITTED is an error, SERIALIZABLE a warning, the usual two fine; log flushing and read-only', () => {
    assert.deepEqual(judged([{ name: 'mysql.transaction_isolation', value: 'READ-UNCOMMITTED' }]), ['mysql.transaction_isolation:error']);
    assert.deepEqual(judged([{ name: 'mysql.transaction_isolation', value: 'SERIALIZABLE' }]), ['mysql.transaction_isolation:warning']);
    assert.deepEqual(judged([{ name: 'mysql.transaction_isolation', value: 'REPEATABLE-READ' }, { name: 'mysql.transaction_isolation', value: 'READ-COMMITTED' }]), []);
    assert.deepEqual(judged([{ name: 'mysql.innodb_flush_log_at_trx_commit', value: '2' }, { name: 'mysql.read_only', value: 'ON' }]), ['mysql.innodb_flush_log_at_trx_commit:warning', 'mysql.read_only:warning']);
  });

  it('SQLite: a network filesystem is an error, a journal mode other than WAL a warning, an unknown filesystem nothing', () => {
    for (const fs of ['nfs', 'nfs4', 'cifs', 'smb3', 'fuse.sshfs']) assert.deepEqual(judged([{ name: 'sqlite.filesystem', value: fs }]), ['sqlite.filesystem:error'], fs);
    for (const fs of ['ext4', 'xfs', 'btrfs', 'tmpfs', 'overlay', 'zfs']) assert.deepEqual(judged([{ name: 'sqlite.filesystem', value: fs }]), [], fs);
    assert.deepEqual(judged([{ name: 'sqlite.filesystem', value: null }]), []);
    assert.deepEqual(judged([{ name: 'sqlite.journal_mode', value: 'delete' }, { name: 'sqlite.journal_mode', value: 'wal' }]), ['sqlite.journal_mode:warning']);
  });

  it('PostgreSQL: fsync off and a standby are errors; synchronous_commit off and a stricter default isolation warnings', () => {
    assert.deepEqual(judged([{ name: 'postgres.fsync', value: 'off' }, { name: 'postgres.in_recovery', value: 'on' }, { name: 'postgres.default_transaction_read_only', value: 'on' }]), [
      'postgres.fsync:error', 'postgres.in_recovery:error', 'postgres.default_transaction_read_only:error',
    ]);
    assert.deepEqual(judged([{ name: 'postgres.synchronous_commit', value: 'off' }, { name: 'postgres.synchronous_commit', value: 'local' }, { name: 'postgres.default_transaction_isolation', value: 'serializable' }]), [
      'postgres.synchronous_commit:warning', 'postgres.default_transaction_isolation:warning',
    ]);
    assert.deepEqual(judged([{ name: 'postgres.fsync', value: 'on' }, { name: 'postgres.default_transaction_isolation', value: 'read committed' }, { name: 'postgres.unknown_thing', value: 'off' }]), []);
  });
});

describe('doctor: findings from facts', () => {
  const by = (f: DoctorFacts, check: string) => diagnose(f).find((x) => x.check === check);

  it('the schema: none, behind, ahead, current', () => {
    assert.equal(by(base({ schemaVersion: 0 }), 'schema')?.severity, 'error');
    assert.match(by(base({ schemaVersion: 1, expectedSchemaVersion: 2 }), 'schema')?.fix ?? '', /leasehold migrate/);
    assert.match(by(base({ schemaVersion: 3, expectedSchemaVersion: 2 }), 'schema')?.fix ?? '', /upgrade leasehold/);
    assert.equal(verdict(diagnose(base())), 'ok');
  });

  it('the clock: a skew within the query round trip is no skew', () => {
    assert.equal(by(base({ clock: { hostMs: 0, databaseMs: 2_500, roundTripMs: 1_200 } }), 'clock')?.severity, 'ok');
    assert.equal(by(base({ clock: { hostMs: 0, databaseMs: 2_500, roundTripMs: 200 } }), 'clock')?.severity, 'warning');
    assert.match(by(base({ clock: { hostMs: 0, databaseMs: -5 * 60_000, roundTripMs: 0 } }), 'clock')?.summary ?? '', /5 min ahead of the database's/);
  });

  it('attempts past their max runtime are a warning; long ones within it only information', () => {
    const overdue = { id: '1', type: 't', runningForMs: 10 * 60_000, maxRuntimeMs: 60_000 };
    const long = { id: '2', type: 't', runningForMs: 2 * HOUR, maxRuntimeMs: 3 * HOUR };
    assert.equal(by(base({ running: [overdue, long] }), 'long-running')?.severity, 'warning');
    assert.equal(by(base({ running: [long] }), 'long-running')?.severity, 'info');
    assert.equal(by(base({ running: [{ ...long, runningForMs: 60_000 }] }), 'long-running')?.severity, 'ok');
  });

  it('retention: jobs a day past it mean nothing prunes; just past it, the next prune takes them', () => {
    const row = { status: 'succeeded', retentionMs: 7 * DAY };
    assert.equal(by(base({ pastRetention: [{ ...row, count: 5, overdue: 2 }] }), 'retention')?.severity, 'warning');
    assert.equal(by(base({ pastRetention: [{ ...row, count: 5, overdue: 0 }] }), 'retention')?.severity, 'info');
    assert.equal(by(base({ pastRetention: [{ ...row, count: 0, overdue: 0 }] }), 'retention')?.severity, 'ok');
  });

  it('dead jobs in the last day and checks that could not run', () => {
    assert.equal(by(base({ deadRecently: [{ type: 'a', count: 2 }] }), 'dead')?.severity, 'warning');
    assert.equal(by(base({ deadRecently: [] }), 'dead')?.severity, 'ok');
    const f = diagnose(base({ failed: [{ check: 'indexes', message: 'permission denied' }] }));
    assert.equal(verdict(f), 'error');
  });

  it('humanMs', () => {
    assert.deepEqual([humanMs(500), humanMs(90_000), humanMs(-3 * 60_000), humanMs(5 * HOUR), humanMs(3 * DAY)], ['500 ms', '90 s', '-3 min', '5 h', '3 d']);
  });
});

describe('doctor: unhandled due jobs', () => {
  const base: DoctorFacts = { dialect: 'sqlite', schemaVersion: 1, expectedSchemaVersion: 1 };
  const status = (f: DoctorFacts) => diagnose(f).find((x) => x.check === 'unhandled')?.severity;
  it('none found is ok only when every due job was read', () => {
    assert.equal(status({ ...base, unhandled: [] }), 'ok');
    assert.equal(status({ ...base, unhandled: [], unhandledComplete: true }), 'ok');
    assert.equal(status({ ...base, unhandled: [], unhandledComplete: false }), 'info', 'past the read bound an empty list proves nothing');
    assert.equal(status({ ...base, unhandled: [{ type: 't', queue: 'q', due: 3, capped: true }], unhandledComplete: false }), 'warning');
  });
});
