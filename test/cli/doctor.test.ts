/**
 * `leasehold doctor` on SQLite, PostgreSQL and MySQL/MariaDB: a healthy, migrated database
 * exits 0; a skewed host clock (injected, LEASEHOLD_DOCTOR_CLOCK_OFFSET_MS) is a warning
 * (exit 5); a dropped index, an expired lease nobody rescued and a due job no live worker
 * handles are each reported, with what to do, and the dropped index makes it exit 6.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Finding } from '../../src/core/doctor.js';
import { type CliDb, dbTargets, jobIn, openCliDb } from './support-dbs.js';

interface DoctorJson {
  dialect: string;
  schemaVersion: number;
  expectedSchemaVersion: number;
  verdict: 'ok' | 'warning' | 'error';
  exitCode: number;
  findings: Finding[];
}

const SKEW = { LEASEHOLD_DOCTOR_CLOCK_OFFSET_MS: String(10 * 60_000) };

const problems = (d: DoctorJson) => d.findings.filter((f) => f.severity === 'warning' || f.severity === 'error').map((f) => `${f.check}:${f.severity}`).sort();

for (const target of await dbTargets('cli: leasehold doctor')) {
  describe(`leasehold doctor (${target.kind})`, { skip: target.skip }, () => {
    let db: CliDb;
    before(async () => {
      db = await openCliDb(target);
    });
    after(() => db?.close());

    it('a healthy, migrated database: every check ok, exit 0', async () => {
      const r = await db.run(['doctor']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /nothing wrong/);
      assert.match(r.stdout, /ok\s+indexes\s+all \d+ indexes of the migrations are present/);
      const j = await db.run(['doctor', '--json']);
      assert.equal(j.code, 0, j.stderr);
      const d = JSON.parse(j.stdout) as DoctorJson;
      assert.equal(d.verdict, 'ok');
      assert.equal(d.exitCode, 0);
      assert.equal(d.schemaVersion, d.expectedSchemaVersion);
      assert.deepEqual(problems(d), []);
      const checks = new Set(d.findings.map((f) => f.check));
      for (const c of ['schema', 'indexes', 'clock', 'leases', 'unhandled', 'dead', 'long-running', 'retention', 'settings', 'tables']) assert.ok(checks.has(c), `a ${c} finding`);
      for (const f of d.findings) assert.deepEqual(Object.keys(f).sort(), ['check', 'details', 'fix', 'severity', 'summary']);
    });

    it('a host clock 10 minutes behind the database is a warning: exit 5', async () => {
      const r = await db.run(['doctor', '--json'], SKEW);
      assert.equal(r.code, 5, r.stderr);
      const d = JSON.parse(r.stdout) as DoctorJson;
      assert.deepEqual(problems(d), ['clock:warning']);
      assert.match(d.findings.find((f) => f.check === 'clock')!.summary, /10 min ahead of the database's/);
    });

    it('a dropped index, a stale lease, a skewed clock and an unhandled due job: each reported with a fix, exit 6', async () => {
      const s = db.storage;
      const stale = await jobIn(s, 'crashed-type', 'running', { leaseMs: 60_000 });
      await db.backdate('locked_until', [stale.id], 3_600_000);
      await jobIn(s, 'orphan-type', 'queued');
      // last: MySQL's claim names its index (FORCE INDEX) and fails without it
      const dropped = (await s.diagnostics.inspect()).indexes.find((i) => /jobs$/.test(i.table) && !/UNIQUE/i.test(i.definition));
      assert.ok(dropped, 'a plain index on jobs to drop');
      await db.dropIndex(dropped);

      const j = await db.run(['doctor', '--json'], SKEW);
      assert.equal(j.code, 6, j.stderr);
      const d = JSON.parse(j.stdout) as DoctorJson;
      assert.equal(d.verdict, 'error');
      assert.deepEqual(problems(d), ['clock:warning', 'indexes:error', 'leases:warning', 'unhandled:warning']);
      const by = (check: string) => d.findings.find((f) => f.check === check)!;
      assert.deepEqual(by('indexes').details, [`${dropped.name} on ${dropped.table}: missing`]);
      assert.ok(by('indexes').fix?.includes(dropped.definition), 'the fix is the statement that creates it');
      assert.match(by('leases').details.join('\n'), new RegExp(`job ${stale.id} \\(crashed-type\\) held by test-host:1, expired (59|60|61)(\\.\\d)? min ago`));
      assert.deepEqual(by('unhandled').details, ['orphan-type in queue default: 1 due']);
      for (const f of d.findings.filter((x) => x.severity === 'warning' || x.severity === 'error')) assert.ok(f.fix, `${f.check} says what to do`);

      const r = await db.run(['doctor']);
      assert.equal(r.code, 6);
      assert.match(r.stdout, new RegExp(`ERROR\\s+indexes .*\\n.*${dropped.name} on ${dropped.table}: missing\\n\\s+fix: `));
      assert.match(r.stdout, /WARNING\s+leases\s+1 lease\(s\) expired more than 2 min ago/);
      assert.match(r.stdout, /WARNING\s+unhandled/);
      assert.match(r.stdout, /1 error\(s\), 2 warning\(s\)/, 'without the injected offset the clocks agree');
    });

    it('what the database holds reaches the terminal escaped, never as control sequences', async () => {
      await jobIn(db.storage, 'evil\u001b]0;owned\u0007\u001b[2J\u202e', 'queued');
      const r = await db.run(['doctor']);
      assert.ok(r.code === 5 || r.code === 6, `the unhandled job is reported (exit ${r.code})`);
      // eslint-disable-next-line no-control-regex -- the control characters are what must not get through
      assert.doesNotMatch(r.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
      assert.match(r.stdout, /evil\\u001b\]0;owned\\u0007\\u001b\[2J\\u202e in queue default: 1 due/);
    });
  });
}
