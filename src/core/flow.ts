/**
 * Flow control inside the claim: which due jobs may start now. A job type, and a queue, may cap
 * its running jobs (`maxRunning`), its running jobs per concurrency key (`maxRunningPerKey`), and
 * its starts per period (`rate`, a token bucket for the whole scope or per key). A type's limits
 * count its jobs in every queue; a queue's count its jobs of every type; a job under both must
 * fit both. The plan below reads candidates in claim order (priority, run_at, id) in small
 * windows that leave out keys and types already at their limit, so a backlog never hides another
 * key's due job, and decides which to take; the adapter runs the reads and writes the outcome in
 * the same transaction, while it holds the serialisation of every scope involved (so concurrent
 * claimers never overshoot a limit). Jobs not taken are untouched: still due, no attempt used.
 * How a claim's jobs split into groups, each planned on its own, is in ./flow-groups.ts.
 */
import { ValidationError } from './errors.js';
import { validateName } from './job-input.js';

/** A token-bucket rate: at most `limit` starts per `periodMs`. */
export interface RateLimit {
  /** starts allowed per period; the bucket holds at most this many */
  limit: number;
  /** the period, in ms */
  periodMs: number;
  /** one bucket per concurrency key instead of one for the type or queue */
  perKey?: boolean;
}

/** A job type's limits, enforced by every claim in the cluster. */
export interface TypeFlow {
  /** at most this many running jobs of the type */
  maxRunning?: number;
  /** at most this many running jobs of the type per concurrency key (jobs without a key: only maxRunning) */
  maxRunningPerKey?: number;
  /** at most this many starts per period */
  rate?: RateLimit;
}

/** A queue's limits, the same as a type's, counted over the queue's jobs of every type. */
export type QueueFlow = TypeFlow;

/** One set of limits and the jobs it counts: a type's (in every queue) or a queue's (of every type). */
export interface FlowScope {
  /** whose limits: a type's or a queue's */
  kind: 'type' | 'queue';
  /** the type or queue */
  name: string;
  /** its limits */
  flow: TypeFlow;
}

/** A token bucket as stored: `tokens` as of `refilledAt` (epoch ms). */
export interface Bucket {
  /** starts left */
  tokens: number;
  /** when `tokens` was computed, epoch ms */
  refilledAt: number;
}

/** What a scope looks like when the claim begins. */
export interface FlowState {
  /** running jobs of the scope */
  running: number;
  /** running jobs of the scope by concurrency key */
  runningByKey: ReadonlyMap<string, number>;
  /** the scope-wide bucket (a rate not per key), absent when none is stored yet (full) */
  bucket?: Bucket | undefined;
}

/** One due job the adapter read, with the stored buckets of its per-key rates (by bucket name; absent: full). */
export interface FlowCandidate {
  /** the job */
  id: string;
  /** its type */
  type: string;
  /** its queue */
  queue: string;
  /** its concurrency key */
  key: string | null;
  /** its per-key rates' stored buckets */
  buckets?: ReadonlyMap<string, Bucket> | undefined;
}

/**
 * A read the plan asks for: due jobs of the group in claim order, at most `window`, leaving out
 * jobs with these keys, of these types, with these `type|key` pairs, and these ids.
 */
export interface CandidateQuery {
  /** concurrency keys to leave out */
  excludeKeys: string[];
  /** types to leave out */
  excludeTypes: string[];
  /** `type|key` pairs to leave out */
  excludeTypeKeys: string[];
  /** job ids to leave out */
  excludeIds: string[];
  /** at most this many jobs */
  window: number;
}

/** The plan's outcome: the jobs to claim, and the buckets to write back (by bucket name). */
export interface FlowPick {
  /** the jobs to claim */
  ids: string[];
  /** the buckets to write back, by name */
  buckets: Map<string, Bucket>;
}

/** Reads per claim at most: each pass either fills the claim or saturates the keys it saw. */
export const FLOW_PASSES = 4;

/** Marks a queue's row and buckets apart from a type's: no job type or queue name contains it. */
export const QUEUE_PREFIX = '@';

/** The row a scope's claims serialise on, which also holds its scope-wide bucket: the type's name, or `@` and the queue's. */
export function scopeRowName(scope: Pick<FlowScope, 'kind' | 'name'>): string {
  return scope.kind === 'queue' ? `${QUEUE_PREFIX}${scope.name}` : scope.name;
}

/** A per-key bucket of a scope: the scope's row and the key (jobs without one share the empty key's). */
export function keyBucketName(scope: Pick<FlowScope, 'kind' | 'name'>, key: string | null): string {
  return `${scopeRowName(scope)}|${key ?? ''}`;
}

/** The bucket a job spends under a scope's rate: the scope's row, or its per-key bucket. */
export function scopeBucketName(scope: Pick<FlowScope, 'kind' | 'name'>, key: string | null, rate: RateLimit): string {
  return rate.perKey ? keyBucketName(scope, key) : scopeRowName(scope);
}

/** The name a type's bucket is stored under: the type, or the type and the key. */
export function bucketName(type: string, key: string | null, rate: RateLimit): string {
  return scopeBucketName({ kind: 'type', name: type }, key, rate);
}

/** Whether a scope counts this job. */
export function covers(scope: Pick<FlowScope, 'kind' | 'name'>, job: { type: string; queue: string }): boolean {
  return scope.kind === 'type' ? job.type === scope.name : job.queue === scope.name;
}

/** Tokens in a bucket now, refilled at limit/period since it was stored (absent: full). */
export function tokensNow(b: Bucket | undefined, rate: RateLimit, nowMs: number): number {
  if (!b) return rate.limit;
  return Math.min(rate.limit, b.tokens + (Math.max(0, nowMs - b.refilledAt) * rate.limit) / rate.periodMs);
}

/** A scope's limits as one plan spends them. */
class Tally {
  running: number;
  readonly byKey: Map<string, number>;
  /** tokens left by bucket name */
  readonly tokens = new Map<string, number>();
  /** keys whose per-key bucket ran dry */
  readonly dry = new Set<string>();

  constructor(readonly scope: FlowScope, state: FlowState, private readonly nowMs: number) {
    this.running = state.running;
    this.byKey = new Map(state.runningByKey);
    const rate = scope.flow.rate;
    if (rate && !rate.perKey) this.tokens.set(scopeRowName(scope), tokensNow(state.bucket, rate, nowMs));
  }

  /** at maxRunning, or out of scope-wide tokens */
  get full(): boolean {
    const { maxRunning, rate } = this.scope.flow;
    if (maxRunning !== undefined && this.running >= maxRunning) return true;
    return rate !== undefined && !rate.perKey && (this.tokens.get(scopeRowName(this.scope)) ?? 0) < 1;
  }

  /** keys at their running limit or out of their own tokens */
  get blockedKeys(): string[] {
    const max = this.scope.flow.maxRunningPerKey;
    const atMax = max === undefined ? [] : [...this.byKey].filter(([, n]) => n >= max).map(([k]) => k);
    return [...new Set([...atMax, ...this.dry])];
  }

  admits(c: FlowCandidate): boolean {
    const { maxRunningPerKey, rate } = this.scope.flow;
    if (this.full) return false;
    if (c.key !== null && maxRunningPerKey !== undefined && (this.byKey.get(c.key) ?? 0) >= maxRunningPerKey) return false;
    if (!rate?.perKey) return true;
    const name = scopeBucketName(this.scope, c.key, rate);
    if (!this.tokens.has(name)) this.tokens.set(name, tokensNow(c.buckets?.get(name), rate, this.nowMs));
    if ((this.tokens.get(name) as number) >= 1) return true;
    if (c.key !== null) this.dry.add(c.key);
    return false;
  }

  /** Count the job in; spend its token, recording the bucket to write back. */
  take(c: FlowCandidate, spent: Map<string, Bucket>): void {
    const rate = this.scope.flow.rate;
    if (rate) {
      const name = scopeBucketName(this.scope, c.key, rate);
      const left = (this.tokens.get(name) as number) - 1;
      this.tokens.set(name, left);
      spent.set(name, { tokens: left, refilledAt: this.nowMs });
      if (rate.perKey && left < 1 && c.key !== null) this.dry.add(c.key);
    }
    this.running++;
    if (c.key !== null) this.byKey.set(c.key, (this.byKey.get(c.key) ?? 0) + 1);
  }
}

/**
 * The plan of one group as a generator, so one algorithm serves synchronous (SQLite, memory) and
 * asynchronous (PostgreSQL, MySQL) adapters: it yields reads and receives their rows. `scopes[0]`
 * counts every job of the group (the group's queue, or its one type); the others (types) count
 * the jobs they cover. `states` are in the order of `scopes`.
 */
export function* flowPlan(scopes: readonly FlowScope[], states: readonly FlowState[], nowMs: number, limit: number): Generator<CandidateQuery, FlowPick, FlowCandidate[]> {
  const tallies = scopes.map((s, i) => new Tally(s, states[i] ?? { running: 0, runningByKey: new Map() }, nowMs));
  const [lead, ...others] = tallies;
  const buckets = new Map<string, Bucket>();
  const ids: string[] = [];
  const window = Math.max(32, limit * 4);
  for (let pass = 0; lead && pass < FLOW_PASSES && ids.length < limit && !lead.full; pass++) {
    const typed = others.filter((t) => t.scope.kind === 'type');
    const candidates: FlowCandidate[] = yield {
      excludeKeys: lead.blockedKeys,
      excludeTypes: typed.filter((t) => t.full).map((t) => t.scope.name),
      excludeTypeKeys: typed.flatMap((t) => t.blockedKeys.map((k) => `${t.scope.name}|${k}`)),
      excludeIds: [...ids],
      window,
    };
    for (const c of candidates) {
      if (ids.length >= limit || lead.full) break;
      const applying = tallies.filter((t) => covers(t.scope, c));
      if (!applying.every((t) => t.admits(c))) continue;
      for (const t of applying) t.take(c, buckets);
      ids.push(c.id);
    }
    // a short read saw every due job of the group
    if (candidates.length < window) break;
  }
  return { ids, buckets };
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

/** A set of limits checked; `of` names the owner in the message ("job x", "queue y"). The first bad value throws. */
function validateFlow(of: string, flow: TypeFlow): TypeFlow {
  const int = (name: string, v: number | undefined, max: number) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > max)) throw new ValidationError('INVALID_OPTION', `${of}: ${name} must be an integer from 1 to ${max}; got ${String(v)}`);
  };
  int('maxRunning', flow.maxRunning, 100_000);
  int('maxRunningPerKey', flow.maxRunningPerKey, 100_000);
  if (flow.rate) {
    int('rate.limit', flow.rate.limit, 1_000_000);
    int('rate.periodMs', flow.rate.periodMs, 366 * 86_400_000);
  }
  return flow;
}

/** A type's limits checked; the first bad value throws. */
export function validateTypeFlow(type: string, flow: TypeFlow): TypeFlow {
  return validateFlow(`job ${type}`, flow);
}

/** Queues' limits checked (names and values); the first bad one throws. Queues given no limit are left out; undefined when none is left. */
export function validateQueueFlows(limits: Readonly<Record<string, QueueFlow>> | undefined): Record<string, QueueFlow> | undefined {
  if (limits === undefined) return undefined;
  if (typeof limits !== 'object' || limits === null) throw new ValidationError('INVALID_OPTION', 'queueLimits must be an object of limits by queue name');
  const out: Record<string, QueueFlow> = {};
  for (const [queue, flow] of Object.entries(limits)) {
    validateName('queueLimits queue', queue);
    if (typeof flow !== 'object' || flow === null) throw new ValidationError('INVALID_OPTION', `queue ${queue}: limits must be an object { maxRunning?, maxRunningPerKey?, rate? }`);
    validateFlow(`queue ${queue}`, flow);
    const { maxRunning, maxRunningPerKey, rate } = flow;
    if (maxRunning === undefined && maxRunningPerKey === undefined && rate === undefined) continue;
    out[queue] = { ...(maxRunning !== undefined ? { maxRunning } : {}), ...(maxRunningPerKey !== undefined ? { maxRunningPerKey } : {}), ...(rate !== undefined ? { rate: { ...rate } } : {}) };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
