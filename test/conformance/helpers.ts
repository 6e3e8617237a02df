/**
 * Shared helpers of the conformance suite. Every describe block gets its own fresh database
 * (`useDb`); tests inside one block keep apart by using unique job types (`uniq`), because
 * claims filter by type.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { ClaimedJob, FinishParams, NewJob, Storage } from '../../src/core/storage.js';
import type { ConformanceHarness } from './index.js';

export interface Db {
  readonly storage: Storage;
  connectAnother(): Promise<Storage>;
}

/** A fresh database for the enclosing describe block, cleaned up after it. */
export function useDb(h: ConformanceHarness): Db {
  let made: Awaited<ReturnType<ConformanceHarness['create']>> | undefined;
  before(async () => {
    made = await h.create();
  });
  after(async () => {
    await made?.cleanup();
  });
  const get = () => {
    if (!made) throw new Error('conformance: database not created yet');
    return made;
  };
  return {
    get storage() {
      return get().storage;
    },
    connectAnother: () => get().connectAnother(),
  };
}

let counter = 0;
/** A name no other test uses: a job type, queue, key or worker id. */
export function uniq(prefix = 't'): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

export function newJob(type: string, over: Partial<NewJob> = {}): NewJob {
  return {
    queue: 'default',
    type,
    payload: { n: 1 },
    priority: 0,
    runAfterMs: 0,
    maxAttempts: 3,
    idempotencyKey: null,
    timeoutMs: 60_000,
    maxRuntimeMs: 600_000,
    ...over,
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Slack for rounding between the database clock and what we computed from it. */
export const CLOCK_SLACK_MS = 5;

/** `actual` lies in [lo - slack, hi + slack] (all epoch ms). */
export function assertBetween(actual: number, lo: number, hi: number, what: string, slack = CLOCK_SLACK_MS): void {
  assert.ok(
    actual >= lo - slack && actual <= hi + slack,
    `${what}: ${new Date(actual).toISOString()} not within [${new Date(lo).toISOString()}, ${new Date(hi).toISOString()}] ± ${slack} ms`,
  );
}

/** Insert `n` due jobs of `type` and return their ids. */
export async function insertN(s: Storage, type: string, n: number, over: Partial<NewJob> = {}): Promise<string[]> {
  const res = await s.jobs.insert({ jobs: Array.from({ length: n }, (_, i) => newJob(type, { payload: { i }, ...over })) });
  return res.map((r) => r.job.id);
}

/** Insert one due job of a fresh type and claim it. */
export async function insertAndClaim(
  s: Storage,
  opts: { leaseMs?: number; workerId?: string; job?: Partial<NewJob> } = {},
): Promise<ClaimedJob> {
  const type = uniq('job');
  await s.jobs.insert({ jobs: [newJob(type, opts.job)] });
  const claimed = await s.leases.claim({ workerId: opts.workerId ?? 'w1', types: [type], queues: null, limit: 1, leaseMs: opts.leaseMs ?? 30_000 });
  assert.equal(claimed.length, 1, 'expected to claim the job just inserted');
  return claimed[0] as ClaimedJob;
}

/** Claim the (single, due) job of `type` again. */
export async function claimOne(s: Storage, type: string, leaseMs = 30_000, workerId = 'w1'): Promise<ClaimedJob> {
  const claimed = await s.leases.claim({ workerId, types: [type], queues: null, limit: 1, leaseMs });
  assert.equal(claimed.length, 1, `expected to claim one ${type} job`);
  return claimed[0] as ClaimedJob;
}

export function finishOf(job: { id: string; leaseToken: string }, over: Partial<FinishParams> = {}): FinishParams {
  return { id: job.id, leaseToken: job.leaseToken, status: 'succeeded', attempt: { outcome: 'succeeded' }, ...over };
}

/** Finish and assert it landed. */
export async function finish(s: Storage, job: { id: string; leaseToken: string }, over: Partial<FinishParams> = {}): Promise<void> {
  const [r] = await s.leases.finish({ items: [finishOf(job, over)] });
  assert.deepEqual(r, { id: job.id, applied: true });
}

export async function mustGet(s: Storage, id: string) {
  const j = await s.jobs.get({ id });
  assert.ok(j, `job ${id} should exist`);
  return j;
}

/** A token that no claim will have produced. */
export const WRONG_TOKEN = 'not-the-lease-token-0000000000000';

export function byNumericId<T extends { id: string }>(a: T, b: T): number {
  return Number(a.id) - Number(b.id);
}
