/**
 * `leasehold doctor`, the decisions: facts gathered from the database (and this host's clock)
 * in, findings out, each with a severity and what to do. Pure; the CLI gathers the facts
 * (src/cli/doctor-command.ts) and prints the findings.
 */
import { judgeSettings } from './doctor-settings.js';
import type { StorageFacts } from './storage-diagnostics.js';

export type Severity = 'ok' | 'info' | 'warning' | 'error';

export interface Finding {
  /** which check: schema, indexes, clock, leases, unhandled, dead, long-running, retention, tables, settings */
  check: string;
  severity: Severity;
  summary: string;
  /** the items behind the summary, one line each */
  details: string[];
  /** what to do; null when nothing is wrong */
  fix: string | null;
}

export interface ExpiredLeaseFact {
  id: string;
  type: string;
  lockedBy: string | null;
  /** database now - locked_until */
  expiredForMs: number;
}

export interface RunningFact {
  id: string;
  type: string;
  runningForMs: number;
  maxRuntimeMs: number;
}

export interface DoctorFacts {
  dialect: string;
  /** the applied migration (0: none) */
  schemaVersion: number;
  /** the version this code's migrations build (Storage.expectedSchemaVersion) */
  expectedSchemaVersion: number;
  storage?: StorageFacts;
  clock?: { hostMs: number; databaseMs: number; roundTripMs: number };
  /** the oldest expired leases first (at most a page of them) */
  expiredLeases?: ExpiredLeaseFact[];
  /** due jobs no live worker has a handler for (runtime findUnhandled) */
  unhandled?: { type: string; queue: string; due: number; capped?: boolean }[];
  /** false when the due jobs read for `unhandled` stopped at their bound: an empty list then proves nothing */
  unhandledComplete?: boolean;
  /** jobs that went dead in the last day, by type (at most a page of them counted) */
  deadRecently?: { type: string; count: number }[];
  running?: RunningFact[];
  /** finished jobs past retention, and of those, past it by more than a day */
  pastRetention?: { status: string; retentionMs: number; count: number; overdue: number }[];
  /** checks that could not run: their names and why */
  failed?: { check: string; message: string }[];
}

export const DOCTOR_LIMITS = {
  /** skew between this host and the database beyond the query's round trip */
  clockSkewMs: 2_000,
  /** a lease expired longer than this has no sweeper rescuing it (cron ticks run each minute) */
  staleLeaseMs: 2 * 60_000,
  /** an attempt running this long is worth a look, even within its max runtime */
  longRunningMs: 60 * 60_000,
  /** how far past its max runtime an attempt may still be winding down (abort grace) */
  overrunGraceMs: 60_000,
};

const finding = (check: string, severity: Severity, summary: string, details: string[] = [], fix: string | null = null): Finding => ({ check, severity, summary, details, fix });

/** "3 s", "4 min", "2.5 h", "3 d" */
export function humanMs(ms: number): string {
  const a = Math.abs(ms);
  const [n, unit] = a < 1_000 ? [a, 'ms'] : a < 120_000 ? [a / 1_000, 's'] : a < 7_200_000 ? [a / 60_000, 'min'] : a < 172_800_000 ? [a / 3_600_000, 'h'] : [a / 86_400_000, 'd'];
  return `${ms < 0 ? '-' : ''}${Number(n.toFixed(1))} ${unit}`;
}

function schema(f: DoctorFacts): Finding {
  const want = f.expectedSchemaVersion;
  if (f.schemaVersion === 0) return finding('schema', 'error', 'the database has no leasehold tables yet', [], 'run `leasehold migrate`');
  if (f.schemaVersion < want) return finding('schema', 'error', `schema version ${f.schemaVersion}, this leasehold needs ${want}`, [], 'run `leasehold migrate`');
  if (f.schemaVersion > want) return finding('schema', 'error', `schema version ${f.schemaVersion} is newer than this leasehold knows (${want})`, [], 'upgrade leasehold on this host to the version that migrated the database');
  return finding('schema', 'ok', `schema version ${f.schemaVersion}, as this leasehold expects`);
}

function indexes(s: StorageFacts): Finding {
  const bad = s.indexes.filter((i) => i.state !== 'present');
  if (bad.length === 0) return finding('indexes', 'ok', `all ${s.indexes.length} indexes of the migrations are present`);
  return finding(
    'indexes', 'error',
    `${bad.length} index(es) missing or unusable: claims, sweeps or prunes scan whole tables, and a missing unique index lets duplicates in`,
    bad.map((i) => `${i.name} on ${i.table}: ${i.state}`),
    `recreate ${bad.length === 1 ? 'it' : 'them'}: ${bad.map((i) => (i.state === 'invalid' ? `REINDEX INDEX ${i.name}` : i.definition)).join('; ')}`,
  );
}

function clock(c: NonNullable<DoctorFacts['clock']>): Finding {
  const skew = c.databaseMs - c.hostMs;
  const beyond = Math.abs(skew) - c.roundTripMs / 2;
  const text = `this host's clock is ${humanMs(Math.abs(skew))} ${skew > 0 ? 'behind' : 'ahead of'} the database's`;
  if (beyond <= DOCTOR_LIMITS.clockSkewMs) return finding('clock', 'ok', `clocks agree (${humanMs(skew)} apart, query round trip ${humanMs(c.roundTripMs)})`);
  return finding('clock', 'warning', `${text}: leasehold times leases by the database, but --run-at times, schedules you compute and logs use this host's`, [], 'synchronise both clocks with NTP (chrony, systemd-timesyncd)');
}

function leases(expired: ExpiredLeaseFact[]): Finding {
  const stale = expired.filter((e) => e.expiredForMs > DOCTOR_LIMITS.staleLeaseMs);
  const line = (e: ExpiredLeaseFact) => `job ${e.id} (${e.type}) held by ${e.lockedBy ?? '?'}, expired ${humanMs(e.expiredForMs)} ago`;
  if (stale.length > 0) {
    return finding('leases', 'warning', `${stale.length} lease(s) expired more than ${humanMs(DOCTOR_LIMITS.staleLeaseMs)} ago and not rescued: no sweeper runs for their types`, stale.slice(0, 10).map(line),
      'run a `leasehold worker` (or `leasehold tick` from cron) with handlers for these types: its sweeper rescues them');
  }
  if (expired.length > 0) return finding('leases', 'info', `${expired.length} lease(s) expired recently; a sweeper should rescue them shortly`, expired.slice(0, 10).map(line));
  return finding('leases', 'ok', 'no expired leases');
}

function unhandled(u: NonNullable<DoctorFacts['unhandled']>, complete: boolean): Finding {
  if (u.length === 0 && !complete) return finding('unhandled', 'info', 'more due jobs than doctor reads; among those read, every one has a live worker for its type');
  if (u.length === 0) return finding('unhandled', 'ok', 'every due job has a live worker for its type');
  // the due jobs read are bounded: past the bound each number is a floor
  const atLeast = u.some((x) => x.capped) ? 'at least ' : '';
  return finding('unhandled', 'warning', `${atLeast}${u.reduce((a, x) => a + x.due, 0)} due job(s) wait: no live worker has a handler for their type and queue`,
    u.map((x) => `${x.type} in queue ${x.queue}: ${x.capped ? 'at least ' : ''}${x.due} due`),
    'start a worker whose handlers module defines these types (and serves these queues); under cron, they run at the next `leasehold tick`');
}

function dead(d: NonNullable<DoctorFacts['deadRecently']>): Finding {
  const n = d.reduce((a, x) => a + x.count, 0);
  if (n === 0) return finding('dead', 'ok', 'no job went dead in the last day');
  return finding('dead', 'warning', `${n} job(s) went dead in the last day`, d.map((x) => `${x.type}: ${x.count}`),
    'look at them with `leasehold jobs list --status dead` and `leasehold jobs show ID`; `leasehold retry ID` runs one again');
}

function longRunning(r: RunningFact[]): Finding {
  const overdue = r.filter((x) => x.runningForMs > x.maxRuntimeMs + DOCTOR_LIMITS.overrunGraceMs);
  const long = r.filter((x) => x.runningForMs > DOCTOR_LIMITS.longRunningMs && !overdue.includes(x));
  const line = (x: RunningFact) => `job ${x.id} (${x.type}) running for ${humanMs(x.runningForMs)}, max runtime ${humanMs(x.maxRuntimeMs)}`;
  if (overdue.length > 0) {
    return finding('long-running', 'warning', `${overdue.length} attempt(s) running past their max runtime: a handler ignores its abort signal, or its worker is wedged`,
      [...overdue, ...long].slice(0, 10).map(line), 'pass ctx.signal on to the handler\'s slow calls; `leasehold cancel ID` stops one');
  }
  if (long.length > 0) return finding('long-running', 'info', `${long.length} attempt(s) running longer than ${humanMs(DOCTOR_LIMITS.longRunningMs)}`, long.slice(0, 10).map(line));
  return finding('long-running', 'ok', 'no long-running attempts');
}

function retention(p: NonNullable<DoctorFacts['pastRetention']>): Finding {
  const details = p.filter((x) => x.count > 0).map((x) => `${x.status}: ${x.count} finished over ${humanMs(x.retentionMs)} ago (${x.overdue} over a day longer)`);
  if (p.some((x) => x.overdue > 0)) {
    return finding('retention', 'warning', 'finished jobs stay past retention: nothing prunes them', details,
      'run `leasehold prune` once, then keep a `leasehold worker` running or `leasehold tick` in cron (both prune)');
  }
  if (details.length > 0) return finding('retention', 'info', 'some finished jobs are past retention; the next prune removes them', details);
  return finding('retention', 'ok', 'no finished job is past retention');
}

function tables(s: StorageFacts): Finding {
  const size = (b: number | null) => (b === null ? '' : `, ${(b / 1_048_576).toFixed(1)} MiB`);
  const details = s.tables.map((t) => `${t.name}: ${t.rows === null ? '?' : `${t.estimated ? '~' : ''}${t.rows}`} rows${size(t.bytes)}`);
  if (s.databaseBytes !== null) details.push(`database: ${(s.databaseBytes / 1_048_576).toFixed(1)} MiB`);
  return finding('tables', 'info', 'table sizes', details);
}

function settings(s: StorageFacts): Finding[] {
  const judged = judgeSettings(s.settings);
  if (judged.length === 0) return [finding('settings', 'ok', `${s.settings.length} setting(s) checked, none breaks a guarantee`, s.settings.map((x) => `${x.name} = ${x.value ?? '?'}${x.detail ? ` (${x.detail})` : ''}`))];
  return judged.map((j) => finding('settings', j.severity, j.summary, [`${j.setting.name} = ${j.setting.value ?? '?'}${j.setting.detail ? ` (${j.setting.detail})` : ''}`], j.fix));
}

/** Every finding, in a fixed order: the schema first, sizes last. */
export function diagnose(f: DoctorFacts): Finding[] {
  const out: Finding[] = [schema(f)];
  if (f.storage) out.push(indexes(f.storage));
  if (f.clock) out.push(clock(f.clock));
  if (f.expiredLeases) out.push(leases(f.expiredLeases));
  if (f.unhandled) out.push(unhandled(f.unhandled, f.unhandledComplete ?? true));
  if (f.deadRecently) out.push(dead(f.deadRecently));
  if (f.running) out.push(longRunning(f.running));
  if (f.pastRetention) out.push(retention(f.pastRetention));
  if (f.storage) out.push(...settings(f.storage), tables(f.storage));
  for (const x of f.failed ?? []) out.push(finding(x.check, 'error', `could not check: ${x.message}`, [], 'see the message; `leasehold migrate` if tables are missing'));
  return out;
}

/** The worst severity among the findings. */
export function verdict(findings: readonly Finding[]): 'ok' | 'warning' | 'error' {
  if (findings.some((f) => f.severity === 'error')) return 'error';
  return findings.some((f) => f.severity === 'warning') ? 'warning' : 'ok';
}
