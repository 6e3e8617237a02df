/**
 * Assertions over what a test app enqueued. They throw node:assert's AssertionError, which
 * node:test and every other runner report as a failed assertion with its diff.
 */
import assert, { AssertionError } from 'node:assert';
import type { JobStatus } from '../core/status.js';
import type { JobRow } from '../core/storage.js';
import type { JobInput, JobList, JobTypeName } from '../runtime/job-types.js';
import type { TestApp } from './test-app.js';

/** Some of a payload's fields, at any depth (arrays whole). */
export type PayloadFields<P> = P extends readonly unknown[] ? P : P extends object ? { [K in keyof P]?: PayloadFields<P[K]> } : P;

/** Options for `expectEnqueued`. */
export interface ExpectEnqueuedOptions {
  /** exactly this many jobs match (default: at least one) */
  count?: number;
  /** only jobs now in this status */
  status?: JobStatus;
}

/** Whether `payload` holds every field of `expected` (arrays and values compared deeply). */
function contains(payload: unknown, expected: unknown): boolean {
  // read at the call: Node.js 22 before 22.13 has no partialDeepStrictEqual, and a named import would fail to link
  if (typeof assert.partialDeepStrictEqual !== 'function') throw new Error(`matching a payload needs Node.js 22.13 or later (this is ${process.version})`);
  try {
    assert.partialDeepStrictEqual(payload, expected);
    return true;
  } catch (e) {
    if (e instanceof AssertionError) return false;
    throw e;
  }
}

async function matching<J extends JobList>(t: Pick<TestApp<J>, 'enqueued'>, type: JobTypeName<J>, payload: unknown, status: JobStatus | undefined) {
  const all = await t.enqueued(type);
  const candidates = status === undefined ? all : all.filter((j) => j.status === status);
  return { all, found: payload === undefined ? candidates : candidates.filter((j) => contains(j.payload, payload)) };
}

function describe(type: string, payload: unknown, opts: ExpectEnqueuedOptions): string {
  const what = `a ${type} job${payload === undefined ? '' : ` with a payload containing ${JSON.stringify(payload)}`}${opts.status ? ` (status ${opts.status})` : ''}`;
  return opts.count === undefined ? what : `${opts.count} × ${what}`;
}

/**
 * Assert that a job of `type` whose payload contains `payload` (every field given, compared
 * deeply; omitted: any payload) was enqueued; resolves to the matching jobs, oldest first.
 */
export async function expectEnqueued<const J extends JobList, T extends JobTypeName<J>>(
  t: TestApp<J>,
  type: T,
  payload?: PayloadFields<JobInput<J, T>>,
  opts: ExpectEnqueuedOptions = {},
): Promise<JobRow[]> {
  const { all, found } = await matching(t, type, payload, opts.status);
  const ok = opts.count === undefined ? found.length > 0 : found.length === opts.count;
  if (!ok) {
    throw new AssertionError({
      message: `expected ${describe(type, payload, opts)} to be enqueued; found ${found.length} matching of ${all.length} ${type} job(s)`,
      actual: all.map((j) => ({ status: j.status, payload: j.payload })),
      expected: payload,
      operator: 'expectEnqueued',
      stackStartFn: expectEnqueued,
    });
  }
  return found;
}

/** Assert that no job of `type` whose payload contains `payload` (omitted: any) was enqueued. */
export async function expectNotEnqueued<const J extends JobList, T extends JobTypeName<J>>(
  t: TestApp<J>,
  type: T,
  payload?: PayloadFields<JobInput<J, T>>,
  opts: Omit<ExpectEnqueuedOptions, 'count'> = {},
): Promise<void> {
  const { found } = await matching(t, type, payload, opts.status);
  if (found.length > 0) {
    throw new AssertionError({
      message: `expected no ${describe(type, payload, opts).replace(/^a /, '')} to be enqueued; found ${found.length}`,
      actual: found.map((j) => ({ id: j.id, status: j.status, payload: j.payload })),
      expected: [],
      operator: 'expectNotEnqueued',
      stackStartFn: expectNotEnqueued,
    });
  }
}
