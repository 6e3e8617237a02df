/**
 * attempts.series on the SQL databases over a week of attempts: rows written straight into
 * job_attempts at chosen times, outcomes, run times and waits; each window (hour: attempts
 * only; day and week: closed slots counted once into attempt_rollups) equals what core computes
 * from those rows, and once the attempts are deleted the day and week still show them (they are
 * read from the counted slots, not counted again).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { CHART_RANGES, FAILURE_OUTCOMES, binOf } from '../../src/core/charts.js';
import type { AttemptOutcome } from '../../src/core/status.js';
import type { AttemptSeries, AttemptSeriesQuery, Storage } from '../../src/core/storage.js';
import { sqliteStorage } from '../../src/storage/sqlite/index.js';
import { ROLLUP_SLOTS_PER_SWEEP, warmWindow } from '../../src/core/chart-rollups.js';
import { JobRegistry } from '../../src/runtime/job-definition.js';
import { Sweeper } from '../../src/runtime/sweeper.js';
import pino from 'pino';
import { serverFor } from '../support/databases.js';
import { job } from './sqlite-support.js';
import { postgresFixtures } from './postgres-support.js';
import { throwawayDatabase } from './mysql-support.js';

interface Planted {
  jobId: string;
  type: string;
  agoMs: number;
  outcome: AttemptOutcome;
  durationMs: number;
  waitMs: number;
}

/** Writes attempt rows finished `agoMs` before `now`, deletes them all, and counts the counted slots. */
interface Raw {
  plant(rows: readonly (Planted & { finishedAt: Date; token: string })[]): Promise<void>;
  forget(): Promise<void>;
  slots(): Promise<number>;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const AGO = [30_000, 20 * MIN, 50 * MIN, 3 * HOUR, 5 * HOUR + 7 * MIN, 30 * HOUR, 3 * 24 * HOUR, 6 * 24 * HOUR + 5 * HOUR, 8 * 24 * HOUR];
const OUTCOMES: AttemptOutcome[] = ['succeeded', 'failed', 'succeeded', 'dead', 'timed_out'];

const flat = (rows: readonly object[], label: string): string[] =>
  (rows as Record<string, unknown>[]).map((r) => `${String(r.bucket)}/${String(r[label])}=${String(r.count)}`).sort();

function expected(rows: readonly (Planted & { finishedAt: Date })[], q: AttemptSeriesQuery, from: number) {
  const tally = new Map<string, number>();
  const add = (part: string, bucket: number, label: unknown) => tally.set(`${part}|${bucket}/${String(label)}`, (tally.get(`${part}|${bucket}/${String(label)}`) ?? 0) + 1);
  for (const r of rows) {
    const at = r.finishedAt.getTime();
    if (at < from || at >= from + q.buckets * q.bucketMs) continue;
    const bucket = Math.floor((at - from) / q.bucketMs);
    add('outcome', bucket, r.outcome);
    if (FAILURE_OUTCOMES.includes(r.outcome)) add('type', bucket, r.type);
    add('run', bucket, binOf(r.durationMs));
    add('wait', bucket, binOf(r.waitMs));
  }
  const part = (name: string) => [...tally].filter(([k]) => k.startsWith(`${name}|`)).map(([k, n]) => `${k.slice(name.length + 1)}=${n}`).sort();
  return { outcomes: part('outcome'), failures: part('type'), runTime: part('run'), wait: part('wait') };
}

function assertSeries(s: AttemptSeries, rows: readonly (Planted & { finishedAt: Date })[], q: AttemptSeriesQuery, what: string): void {
  const want = expected(rows, q, s.from.getTime());
  assert.deepEqual(flat(s.outcomes, 'outcome'), want.outcomes, `${what}: outcomes`);
  assert.deepEqual(flat(s.failures, 'type'), want.failures, `${what}: failures`);
  assert.deepEqual(flat(s.runTime, 'bin'), want.runTime, `${what}: run time`);
  assert.deepEqual(flat(s.wait, 'bin'), want.wait, `${what}: wait`);
}

/** Attempts at every AGO (three each), of two jobs, planted. */
async function plantWeek(s: Storage, raw: Raw) {
  const ids = (await s.jobs.insert({ jobs: [job('roll-a'), job('roll-b')] })).map((r) => r.job.id);
  const now = (await s.now()).getTime();
  const rows = AGO.flatMap((ago, i) => [0, 1, 2].map((k) => ({
    jobId: ids[(i + k) % 2]!, type: (i + k) % 2 === 0 ? 'roll-a' : 'roll-b', agoMs: ago + k * 1000, outcome: OUTCOMES[(i + k) % OUTCOMES.length]!,
    durationMs: [0, 7, 150, 2_999, 86_400_000][(i * 3 + k) % 5]!, waitMs: [1, 49, 1_000, 20_000][(i + 2 * k) % 4]!,
    finishedAt: new Date(now - ago - k * 1000), token: `tok-${i}-${k}`,
  })));
  await raw.plant(rows);
  return rows;
}

/** The sweeper's maintenance counts a few closed slots per pass, newest first; passes enough for the week leave a chart nothing to count. */
async function warmedBySweeps(s: Storage, raw: Raw): Promise<void> {
  const rows = await plantWeek(s, raw);
  const sweeper = new Sweeper(s, new JobRegistry([]), pino({ level: 'silent' }), Math.random, { intervalMs: 1_000_000, retention: false, workerSilenceMs: 60_000 });
  await sweeper.maintain();
  assert.equal(await raw.slots(), ROLLUP_SLOTS_PER_SWEEP, 'one pass: its few slots');
  const w = warmWindow((await s.now()).getTime());
  const passes = Math.ceil((w.until - w.from) / (15 * MIN) / ROLLUP_SLOTS_PER_SWEEP);
  for (let i = 1; i < passes; i++) await sweeper.maintain();
  assert.ok((await raw.slots()) >= (w.until - w.from) / (15 * MIN), 'every slot of the week counted by the passes');
  // with the attempts gone, the charts can only show what the sweeps counted
  await raw.forget();
  const closed = rows.filter((r) => r.agoMs >= 20 * MIN && r.agoMs < 7 * 24 * HOUR);
  assertSeries(await s.attempts.series(CHART_RANGES.day), closed, CHART_RANGES.day, 'day, from the sweeps');
  assertSeries(await s.attempts.series(CHART_RANGES.week), closed, CHART_RANGES.week, 'week, from the sweeps');
}

/** The test every SQL database runs, given a migrated storage and raw access to its attempts. */
async function weekOfAttempts(s: Storage, raw: Raw): Promise<void> {
  const rows = await plantWeek(s, raw);
  const hour = await s.attempts.series(CHART_RANGES.hour);
  assertSeries(hour, rows, CHART_RANGES.hour, 'hour');
  const week = await s.attempts.series(CHART_RANGES.week);
  assertSeries(week, rows, CHART_RANGES.week, 'week');
  const day = await s.attempts.series(CHART_RANGES.day);
  assertSeries(day, rows, CHART_RANGES.day, 'day');
  assert.deepEqual(await s.attempts.series(CHART_RANGES.week), week, 'read again: the same');

  await raw.forget();
  // the counted slots stay: the day and week still show every attempt of a closed slot
  const closed = rows.filter((r) => r.agoMs >= 20 * MIN);
  assertSeries(await s.attempts.series(CHART_RANGES.day), closed, CHART_RANGES.day, 'day, attempts deleted');
  assertSeries(await s.attempts.series(CHART_RANGES.week), closed, CHART_RANGES.week, 'week, attempts deleted');
  assertSeries(await s.attempts.series(CHART_RANGES.hour), [], CHART_RANGES.hour, 'hour, attempts deleted');
}

const CASES = [
  ['a week of attempts, then the same with the attempts deleted', weekOfAttempts],
  ['sweeps count the closed slots, and the charts read them', warmedBySweeps],
] as const;

describe('attempts.series over counted slots: sqlite', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'leasehold-rollups-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, run] of CASES) {
    it(name, async () => {
      const file = path.join(dir, `${run.name}.db`);
      const s = sqliteStorage({ path: file });
      await s.migrate();
      const conn = new Database(file);
      try {
        await run(s, {
          plant: async (rows) => {
            const ins = conn.prepare(`INSERT INTO leasehold_job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome, wait_ms)
              VALUES (?, 1, 'w', ?, ?, ?, ?, ?, ?)`);
            for (const r of rows) ins.run(Number(r.jobId), r.token, r.finishedAt.getTime() - r.durationMs, r.finishedAt.getTime(), r.durationMs, r.outcome, r.waitMs);
          },
          forget: async () => void conn.exec('DELETE FROM leasehold_job_attempts'),
          slots: async () => (conn.prepare(`SELECT count(*) AS n FROM leasehold_attempt_rollups WHERE kind = 'slot'`).get() as { n: number }).n,
        });
      } finally {
        conn.close();
        await s.close();
      }
    });
  }
});

const pgUrl = await serverFor('postgres', 'attempts.series over counted slots: postgres');
describe('attempts.series over counted slots: postgres', { skip: pgUrl === null }, () => {
  const fx = postgresFixtures(pgUrl);

  for (const [name, run] of CASES) {
    it(name, async () => {
      const s = fx.fresh();
      await s.migrate();
      const c = await fx.client();
      await run(s, {
        plant: async (rows) => {
          for (const r of rows) {
            await c.query(`INSERT INTO "${s.schema}".job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome, wait_ms)
              VALUES ($1, 1, 'w', $2, $3, $4, $5, $6, $7)`, [r.jobId, r.token, new Date(r.finishedAt.getTime() - r.durationMs), r.finishedAt, r.durationMs, r.outcome, r.waitMs]);
          }
        },
        forget: async () => void (await c.query(`DELETE FROM "${s.schema}".job_attempts`)),
        slots: async () => Number((await c.query(`SELECT count(*) AS n FROM "${s.schema}".attempt_rollups WHERE kind = 'slot'`)).rows[0].n),
      });
    });
  }
});

const myUrl = await serverFor('mysql', 'attempts.series over counted slots: mysql');
describe('attempts.series over counted slots: mysql', { skip: myUrl === null }, () => {
  const server = throwawayDatabase(myUrl);

  for (const [i, [name, run]] of CASES.entries()) {
    it(name, async () => {
      // one database per describe: each case its own tables
      const prefix = `c${i}_`;
      const s = server.make({ tablePrefix: prefix });
      await s.migrate();
      const admin: mysql.Connection = server.adminConnection();
      const utc = (d: Date): string => d.toISOString().slice(0, 23).replace('T', ' ');
      await run(s, {
        plant: async (rows) => {
          for (const r of rows) {
            await admin.query(`INSERT INTO \`${server.db}\`.${prefix}job_attempts (job_id, attempt, worker_id, lease_token, started_at, finished_at, duration_ms, outcome, wait_ms)
              VALUES (?, 1, 'w', ?, ?, ?, ?, ?, ?)`, [r.jobId, r.token, utc(new Date(r.finishedAt.getTime() - r.durationMs)), utc(r.finishedAt), r.durationMs, r.outcome, r.waitMs]);
          }
        },
        forget: async () => void (await admin.query(`DELETE FROM \`${server.db}\`.${prefix}job_attempts`)),
        slots: async () => Number(((await admin.query(`SELECT count(*) AS n FROM \`${server.db}\`.${prefix}attempt_rollups WHERE kind = 'slot'`))[0] as { n: number }[])[0]!.n),
      });
    });
  }
});
