/**
 * The reference model of the model-based test (model.test.ts): the job state machine as the
 * storage contract (src/core/storage.ts) and the core decisions (decide.ts, retry.ts) describe
 * it, written out here on its own — statuses, attempts, run_at, leases and their tokens, the
 * attempt history — so that a real Storage driven by random commands can be compared with it
 * after every step. Times are epoch ms of the controlled database clock.
 */
import assert from 'node:assert/strict';
import type { AttemptOutcome, Decision, JobStatus, RetryPolicy } from '../../src/core/index.js';
import type { JobRow, Storage } from '../../src/core/storage.js';

export const TYPES = ['a', 'b'] as const;
export const WORKERS = ['w1', 'w2'] as const;
/** Every job's retry policy: 1 s, 2 s, 4 s … capped at 8 s, equal jitter. */
export const POLICY: RetryPolicy = { kind: 'exponential', baseMs: 1_000, factor: 2, maxMs: 8_000, jitter: 'equal' };

export interface ModelJob {
  id: string;
  type: string;
  key: string | null;
  priority: number;
  maxAttempts: number;
  status: JobStatus;
  attempts: number;
  runAt: number;
  lockedUntil: number | null;
  lockedBy: string | null;
  /** every lease of this job in the order claimed: its worker, and the attempts it counted */
  leases: { worker: string; attempts: number }[];
  /** which of them holds now (index into `leases`), or null */
  live: number | null;
  finished: boolean;
  lastErrorCode: string | null;
  /** one entry per attempt opened: its number and how it ended ('running' while open) */
  history: { attempt: number; outcome: AttemptOutcome }[];
}

export interface Model {
  now: number;
  jobs: ModelJob[];
}

/** The storage under test, its clock, and the real tokens behind the model's token indexes. */
export interface Real {
  storage: Storage;
  setNow(ms: number): Promise<void>;
  /** per job, in model order: every lease token issued for it, in order */
  tokens: string[][];
}

/** How an attempt ended, as a worker or a sweeper reports it. */
export type Ending = 'success' | 'error' | 'timeout' | 'permanent' | 'snooze' | 'cancel' | 'shutdown' | 'rescue-retry' | 'rescue-fail';

const FINISHED: readonly JobStatus[] = ['succeeded', 'dead', 'cancelled'];

/** The retry delays the policy allows after failed attempt `attempts`, computed apart from retry.ts. */
function band(attempts: number): { min: number; max: number } {
  const nominal = Math.min(8_000, 1_000 * 2 ** (attempts - 1));
  return { min: Math.floor(nominal / 2), max: nominal };
}

/** A failure with `attempts` counted (this one included) of `maxAttempts`: retried or dead. */
function failure(attempts: number, maxAttempts: number, outcome: AttemptOutcome): { status: JobStatus; outcome: AttemptOutcome; delay: 'band' | null } {
  return attempts >= maxAttempts ? { status: 'dead', outcome: outcome === 'failed' ? 'dead' : outcome, delay: null } : { status: 'failed', outcome, delay: 'band' };
}

/**
 * What the decision for `ending` must be, by the rules of the state machine: the status, the
 * attempt's outcome, the delay (a fixed one, one within the policy's band, or none), whether the
 * attempt is given back, the error code, and whether it may land only on an expired lease.
 */
export function expectedDecision(ending: Ending, attempts: number, maxAttempts: number, snoozeMs: number) {
  const base = { uncount: false, onlyIfExpired: false };
  switch (ending) {
    case 'success':
      return { ...base, status: 'succeeded' as JobStatus, outcome: 'succeeded' as AttemptOutcome, delay: null, code: null };
    case 'error':
      return { ...base, ...failure(attempts, maxAttempts, 'failed'), code: 'Error' };
    case 'timeout':
      return { ...base, ...failure(attempts, maxAttempts, 'timed_out'), code: 'TIMEOUT' };
    case 'permanent':
      return { ...base, status: 'dead' as JobStatus, outcome: 'dead' as AttemptOutcome, delay: null, code: 'PERMANENT_FAILURE' };
    case 'snooze':
      return { ...base, status: 'queued' as JobStatus, outcome: 'snoozed' as AttemptOutcome, delay: snoozeMs, uncount: true, code: null };
    case 'cancel':
      return { ...base, status: 'cancelled' as JobStatus, outcome: 'cancelled' as AttemptOutcome, delay: null, code: 'CANCELLED' };
    case 'shutdown':
      return { ...base, status: 'queued' as JobStatus, outcome: 'handed_back' as AttemptOutcome, delay: 0, uncount: true, code: null };
    case 'rescue-retry':
      return { ...base, ...failure(attempts, maxAttempts, 'lease_expired'), code: 'LEASE_EXPIRED', onlyIfExpired: true };
    case 'rescue-fail':
      return { ...base, status: 'dead' as JobStatus, outcome: 'lease_expired' as AttemptOutcome, delay: null, code: 'LEASE_EXPIRED', onlyIfExpired: true };
  }
}

/** The core's decision agrees with the model's rules. */
export function checkDecision(d: Decision, ending: Ending, attempts: number, maxAttempts: number, snoozeMs: number): void {
  const want = expectedDecision(ending, attempts, maxAttempts, snoozeMs);
  const what = `decision for ${ending} after attempt ${attempts} of ${maxAttempts}`;
  assert.equal(d.status, want.status, `${what}: status`);
  assert.equal(d.attempt.outcome, want.outcome, `${what}: outcome`);
  assert.equal(d.uncountAttempt ?? false, want.uncount, `${what}: attempt given back`);
  assert.equal(d.onlyIfExpired ?? false, want.onlyIfExpired, `${what}: only if expired`);
  assert.equal(d.error?.code ?? null, want.code, `${what}: error code`);
  if (want.delay === 'band') {
    const { min, max } = band(attempts);
    assert.ok(d.runAfterMs !== undefined && d.runAfterMs >= min && d.runAfterMs <= max, `${what}: delay ${d.runAfterMs} not in [${min}, ${max}]`);
    assert.equal(d.attempt.retryDelayMs, d.runAfterMs, `${what}: the attempt records the delay`);
  } else {
    assert.equal(d.runAfterMs, want.delay ?? undefined, `${what}: delay`);
  }
}

/** Close the open attempt of `j` with `outcome`. */
function closeAttempt(j: ModelJob, outcome: AttemptOutcome): void {
  const open = j.history.at(-1);
  assert.ok(open && open.outcome === 'running', `model: job ${j.id} has no open attempt`);
  open.outcome = outcome;
}

/** A fenced finish under token `tok` (index into leases): whether it lands, and the job after it. */
export function finishInModel(m: Model, j: ModelJob, tok: number, d: Decision): boolean {
  if (j.status !== 'running' || j.live !== tok) return false;
  if (d.onlyIfExpired && !(j.lockedUntil !== null && j.lockedUntil < m.now)) return false;
  j.status = d.status;
  if (d.runAfterMs !== undefined) j.runAt = m.now + d.runAfterMs;
  if (d.uncountAttempt) j.attempts -= 1;
  if (d.error) j.lastErrorCode = d.error.code;
  releaseLease(j);
  j.finished = FINISHED.includes(d.status);
  closeAttempt(j, d.attempt.outcome);
  return true;
}

function releaseLease(j: ModelJob): void {
  j.live = null;
  j.lockedBy = null;
  j.lockedUntil = null;
}

/** Due jobs of `types` in claim order, at most `limit`: what a claim must take. */
export function dueInOrder(m: Model, types: readonly string[], limit: number): ModelJob[] {
  return m.jobs
    .filter((j) => (j.status === 'queued' || j.status === 'failed') && j.runAt <= m.now && types.includes(j.type))
    .sort((a, b) => a.priority - b.priority || a.runAt - b.runAt || Number(a.id) - Number(b.id))
    .slice(0, limit);
}

/** Lease `j` to `worker` for `leaseMs` (the real token is kept by the caller). */
export function claimInModel(m: Model, j: ModelJob, worker: string, leaseMs: number): void {
  j.status = 'running';
  j.attempts += 1;
  j.lockedUntil = m.now + leaseMs;
  j.lockedBy = worker;
  j.leases.push({ worker, attempts: j.attempts });
  j.live = j.leases.length - 1;
  j.history.push({ attempt: j.attempts, outcome: 'running' });
}

/** Running jobs of `types` whose lease expired, oldest lease first: what a sweep must find. */
export function expiredInOrder(m: Model, types: readonly string[]): ModelJob[] {
  return m.jobs
    .filter((j) => j.status === 'running' && j.lockedUntil !== null && j.lockedUntil < m.now && types.includes(j.type))
    .sort((a, b) => (a.lockedUntil as number) - (b.lockedUntil as number) || Number(a.id) - Number(b.id));
}

/** An operator's cancel: from queued, failed or running; whether it applies. */
export function cancelInModel(m: Model, j: ModelJob): boolean {
  if (!['queued', 'failed', 'running'].includes(j.status)) return false;
  if (j.status === 'running') closeAttempt(j, 'cancelled');
  j.status = 'cancelled';
  j.finished = true;
  j.lastErrorCode = 'CANCELLED';
  releaseLease(j);
  return true;
}

/** An operator's retry now: from queued, failed, dead or cancelled; whether it applies. */
export function retryInModel(m: Model, j: ModelJob): boolean {
  if (!['queued', 'failed', 'dead', 'cancelled'].includes(j.status)) return false;
  j.status = 'queued';
  j.runAt = m.now;
  j.attempts = 0;
  j.finished = false;
  releaseLease(j);
  return true;
}

/** What the model says a job row must show. */
function expectedRow(j: ModelJob, tokens: readonly string[]) {
  return {
    status: j.status, attempts: j.attempts, runAt: j.runAt, lockedUntil: j.lockedUntil, lockedBy: j.lockedBy,
    leaseToken: j.live === null ? null : tokens[j.live], finished: j.finished, lastErrorCode: j.lastErrorCode,
  };
}

/** The same fields of a stored row. */
export function rowView(row: JobRow) {
  return {
    status: row.status, attempts: row.attempts, runAt: row.runAt.getTime(), lockedUntil: row.lockedUntil?.getTime() ?? null, lockedBy: row.lockedBy,
    leaseToken: row.leaseToken, finished: row.finishedAt !== null, lastErrorCode: row.lastErrorCode,
  };
}

/** Every stored job equals its model, and there are no others. */
export async function compareJobs(m: Model, r: Real, after: string): Promise<void> {
  const rows = await r.storage.jobs.list({ limit: 1_000 });
  assert.deepEqual(rows.map((x) => x.id).sort(), m.jobs.map((j) => j.id).sort(), `after ${after}: the jobs stored`);
  const byId = new Map(rows.map((x) => [x.id, x]));
  m.jobs.forEach((j, i) => assert.deepEqual(rowView(byId.get(j.id) as JobRow), expectedRow(j, r.tokens[i] ?? []), `after ${after}: job ${j.id}`));
}

/** Every job's attempt history holds the attempts the model opened, each with its outcome. */
export async function compareHistories(m: Model, r: Real): Promise<void> {
  for (const j of m.jobs) {
    const rows = await r.storage.attempts.list({ jobId: j.id });
    const seen = rows.map((a) => `${a.attempt}:${a.outcome}`).sort();
    assert.deepEqual(seen, j.history.map((a) => `${a.attempt}:${a.outcome}`).sort(), `the attempts of job ${j.id}`);
  }
}
