/**
 * Flow control inside the claim: which due jobs of a limited type may start now. A type may cap
 * its running jobs (`maxRunning`), its running jobs per concurrency key (`maxRunningPerKey`),
 * and its starts per period (`rate`, a token bucket per type or per key). The plan below reads
 * candidates in claim order (priority, run_at, id) in small windows that leave out keys already
 * at their limit, so a key's backlog never hides another key's due job, and decides which to
 * take; the adapter runs the reads and writes the outcome in the same transaction, while it
 * holds its per-type serialisation (so concurrent claimers never overshoot a limit). Jobs not
 * taken are untouched: still due, no attempt used.
 */
import { ValidationError } from './errors.js';

export interface RateLimit {
  /** starts allowed per period; the bucket holds at most this many */
  limit: number;
  periodMs: number;
  /** one bucket per concurrency key instead of one for the type */
  perKey?: boolean;
}

/** A job type's limits, enforced by every claim in the cluster. */
export interface TypeFlow {
  /** at most this many running jobs of the type */
  maxRunning?: number;
  /** at most this many running jobs of the type per concurrency key (jobs without a key: only maxRunning) */
  maxRunningPerKey?: number;
  rate?: RateLimit;
}

/** A token bucket as stored: `tokens` as of `refilledAt` (epoch ms). */
export interface Bucket {
  tokens: number;
  refilledAt: number;
}

/** What the type looks like when the claim begins. */
export interface FlowState {
  /** running jobs of the type */
  running: number;
  /** running jobs of the type by concurrency key */
  runningByKey: ReadonlyMap<string, number>;
  /** the type's own bucket (type-wide rate), absent when none is stored yet (full) */
  typeBucket?: Bucket | undefined;
}

/** One due job the adapter read, with its key's bucket when the rate is per key. */
export interface FlowCandidate {
  id: string;
  key: string | null;
  bucket?: Bucket | undefined;
}

/** A read the plan asks for: due jobs of the type in claim order, leaving these keys and ids out, at most `window`. */
export interface CandidateQuery {
  excludeKeys: string[];
  excludeIds: string[];
  window: number;
}

/** The plan's outcome: the jobs to claim, and the buckets to write back (by bucket name). */
export interface FlowPick {
  ids: string[];
  buckets: Map<string, Bucket>;
}

/** Reads per claim at most: each pass either fills the claim or saturates the keys it saw. */
export const FLOW_PASSES = 4;

/** The name a bucket is stored under: the type, or the type and the key. */
export function bucketName(type: string, key: string | null, rate: RateLimit): string {
  return rate.perKey ? `${type}|${key ?? ''}` : type;
}

/** Tokens in a bucket now, refilled at limit/period since it was stored (absent: full). */
export function tokensNow(b: Bucket | undefined, rate: RateLimit, nowMs: number): number {
  if (!b) return rate.limit;
  return Math.min(rate.limit, b.tokens + (Math.max(0, nowMs - b.refilledAt) * rate.limit) / rate.periodMs);
}

/**
 * The plan as a generator, so one algorithm serves synchronous (SQLite, memory) and
 * asynchronous (PostgreSQL, MySQL) adapters: it yields reads and receives their rows.
 */
export function* flowPlan(type: string, flow: TypeFlow, state: FlowState, nowMs: number, limit: number): Generator<CandidateQuery, FlowPick, FlowCandidate[]> {
  const byKey = new Map(state.runningByKey);
  let running = state.running;
  const buckets = new Map<string, Bucket>();
  const tokens = new Map<string, number>();
  const rate = flow.rate;
  if (rate && !rate.perKey) tokens.set(type, tokensNow(state.typeBucket, rate, nowMs));
  const ids: string[] = [];
  const window = Math.max(32, limit * 4);
  for (let pass = 0; pass < FLOW_PASSES && ids.length < limit; pass++) {
    if (flow.maxRunning !== undefined && running >= flow.maxRunning) break;
    if (rate && !rate.perKey && (tokens.get(type) ?? 0) < 1) break;
    const excludeKeys = flow.maxRunningPerKey === undefined ? [] : [...byKey].filter(([, n]) => n >= (flow.maxRunningPerKey as number)).map(([k]) => k);
    if (rate?.perKey) for (const [name, t] of tokens) if (t < 1) excludeKeys.push(name.slice(type.length + 1));
    const candidates: FlowCandidate[] = yield { excludeKeys, excludeIds: [...ids], window };
    for (const c of candidates) {
      if (ids.length >= limit || (flow.maxRunning !== undefined && running >= flow.maxRunning)) break;
      if (c.key !== null && flow.maxRunningPerKey !== undefined && (byKey.get(c.key) ?? 0) >= flow.maxRunningPerKey) continue;
      if (rate) {
        const name = bucketName(type, c.key, rate);
        if (!tokens.has(name)) tokens.set(name, tokensNow(c.bucket, rate, nowMs));
        const t = tokens.get(name) as number;
        if (t < 1) continue;
        tokens.set(name, t - 1);
        buckets.set(name, { tokens: t - 1, refilledAt: nowMs });
      }
      ids.push(c.id);
      running++;
      if (c.key !== null) byKey.set(c.key, (byKey.get(c.key) ?? 0) + 1);
    }
    // a short read saw every due job of the type
    if (candidates.length < window) break;
  }
  return { ids, buckets };
}

/** A claim's types split: those with limits (each with its limits, claimed first, one plan each) and the rest. */
export function splitByFlow(types: readonly string[], flow: Readonly<Record<string, TypeFlow>> | undefined): { limited: [string, TypeFlow][]; free: string[] } {
  if (!flow) return { limited: [], free: [...types] };
  const limited: [string, TypeFlow][] = [];
  const free: string[] = [];
  for (const t of types) {
    const f = flow[t];
    if (f) limited.push([t, f]);
    else free.push(t);
  }
  return { limited, free };
}

/** Runs the plan with a synchronous read. */
export function runFlowPlan(plan: Generator<CandidateQuery, FlowPick, FlowCandidate[]>, read: (q: CandidateQuery) => FlowCandidate[]): FlowPick {
  let step = plan.next();
  while (!step.done) step = plan.next(read(step.value));
  return step.value;
}

/** Runs the plan with an asynchronous read. */
export async function runFlowPlanAsync(plan: Generator<CandidateQuery, FlowPick, FlowCandidate[]>, read: (q: CandidateQuery) => Promise<FlowCandidate[]>): Promise<FlowPick> {
  let step = plan.next();
  while (!step.done) step = plan.next(await read(step.value));
  return step.value;
}

/** A type's limits checked; the first bad value throws. */
export function validateTypeFlow(type: string, flow: TypeFlow): TypeFlow {
  const int = (name: string, v: number | undefined, max: number) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > max)) throw new ValidationError('INVALID_OPTION', `job ${type}: ${name} must be an integer from 1 to ${max}; got ${String(v)}`);
  };
  int('maxRunning', flow.maxRunning, 100_000);
  int('maxRunningPerKey', flow.maxRunningPerKey, 100_000);
  if (flow.rate) {
    int('rate.limit', flow.rate.limit, 1_000_000);
    int('rate.periodMs', flow.rate.periodMs, 366 * 86_400_000);
  }
  return flow;
}
