/**
 * How one claim's due jobs split for flow control: each limited queue the claim may take from
 * is a group of its own (its jobs of every type the claim handles; the claim's limited types
 * count there too, so a job under both limits must fit both); each limited type is a group over
 * the other queues; the rest is free. The groups are disjoint, so each is planned (./flow.ts)
 * and claimed on its own, under the rows of its scopes: a queue's group serialises with the
 * queue's other claims and with the limited types' claims. Adapters lock a group's rows in one
 * statement in name order; every claim does, so no two wait on each other in a cycle.
 */
import { type Bucket, type FlowCandidate, type FlowScope, type FlowState, type QueueFlow, type TypeFlow, covers, scopeBucketName, scopeRowName } from './flow.js';

/** Which due jobs a part of the claim reads. */
export interface ClaimFilter {
  /** only these job types */
  types: string[];
  /** only these queues; null: every queue but `exceptQueues` */
  queues: string[] | null;
  /** queues another group claims (set only when `queues` is null) */
  exceptQueues: string[];
}

/** A part of the claim under limits. */
export interface FlowGroup extends ClaimFilter {
  /** the limits in force: the first counts every job of the group, the others (types) those they cover */
  scopes: FlowScope[];
}

/** The limits a claim is asked to keep (ClaimParams' fields). */
export interface ClaimLimits {
  /** the types the worker handles */
  types: readonly string[];
  /** the queues it takes from (null: all) */
  queues: readonly string[] | null;
  /** limits by type */
  flow?: Readonly<Record<string, TypeFlow>> | undefined;
  /** limits by queue */
  queueFlow?: Readonly<Record<string, QueueFlow>> | undefined;
}

const own = <T>(r: Readonly<Record<string, T>> | undefined, k: string): T | undefined => (r !== undefined && Object.hasOwn(r, k) ? r[k] : undefined);

/** A claim's groups, limited queues first, then limited types, in the claim's order; `free`: what no limit touches, or null. */
export function flowGroups(p: ClaimLimits): {
  /** the groups under limits */
  limited: FlowGroup[];
  /** the rest, claimed without limits (null: nothing left) */
  free: ClaimFilter | null;
} {
  const typeScopes: FlowScope[] = p.types.flatMap((name) => {
    const flow = own(p.flow, name);
    return flow ? [{ kind: 'type' as const, name, flow }] : [];
  });
  const asked = p.queues ?? Object.keys(p.queueFlow ?? {});
  const queueScopes: FlowScope[] = [...new Set(asked)].flatMap((name) => {
    const flow = own(p.queueFlow, name);
    return flow ? [{ kind: 'queue' as const, name, flow }] : [];
  });
  const limitedQueues = queueScopes.map((s) => s.name);
  const queues = p.queues === null ? null : p.queues.filter((q) => !limitedQueues.includes(q));
  const exceptQueues = p.queues === null ? limitedQueues : [];
  const rest = queues === null || queues.length > 0;
  const limited: FlowGroup[] = [
    ...queueScopes.map((q) => ({ types: [...p.types], queues: [q.name], exceptQueues: [], scopes: [q, ...typeScopes] })),
    ...(rest ? typeScopes.map((t) => ({ types: [t.name], queues, exceptQueues, scopes: [t] })) : []),
  ];
  const freeTypes = p.types.filter((t) => !own(p.flow, t));
  return { limited, free: rest && freeTypes.length > 0 ? { types: freeTypes, queues, exceptQueues } : null };
}

/** The rows a group's claim locks (one per scope; each also holds the scope-wide bucket). */
export function lockNames(g: FlowGroup): string[] {
  return g.scopes.map(scopeRowName);
}

/** What a group's running-count read covers: jobs of these types or in these queues. */
export function runningFilter(g: FlowGroup): {
  /** jobs of these types */
  types: string[];
  /** jobs in these queues */
  queues: string[];
} {
  return { types: g.scopes.filter((s) => s.kind === 'type').map((s) => s.name), queues: g.scopes.filter((s) => s.kind === 'queue').map((s) => s.name) };
}

/** Running jobs counted by type, queue and concurrency key, as adapters read them (runningFilter). */
export interface RunningCount {
  /** the job type */
  type: string;
  /** the queue */
  queue: string;
  /** the concurrency key (null: none) */
  key: string | null;
  /** how many run */
  n: number;
}

/** Each scope's state, in the order of `scopes`, from the running counts and the stored buckets by row name. */
export function scopeStates(scopes: readonly FlowScope[], running: readonly RunningCount[], rows: ReadonlyMap<string, Bucket | undefined>): FlowState[] {
  return scopes.map((s) => {
    const runningByKey = new Map<string, number>();
    let n = 0;
    for (const r of running) {
      if (!covers(s, r)) continue;
      n += r.n;
      if (r.key !== null) runningByKey.set(r.key, (runningByKey.get(r.key) ?? 0) + r.n);
    }
    return { running: n, runningByKey, bucket: rows.get(scopeRowName(s)) };
  });
}

/** The per-key buckets the plan may spend for these candidates (none without a per-key rate). */
export function keyBucketNames(scopes: readonly FlowScope[], candidates: readonly Pick<FlowCandidate, 'type' | 'queue' | 'key'>[]): string[] {
  const names = new Set<string>();
  for (const s of scopes) {
    const rate = s.flow.rate;
    if (!rate?.perKey) continue;
    for (const c of candidates) if (covers(s, c)) names.add(scopeBucketName(s, c.key, rate));
  }
  return [...names];
}
