/**
 * The shape of a workflow enqueued in one call: jobs named by a key, each listing the jobs it
 * waits for (keys of the same call, or ids of jobs already stored). Pure: checks the graph before
 * anything is written and gives the order to insert in, every parent before its children.
 */
import { ValidationError } from './errors.js';
import { validateKeyText } from './limits.js';

/** A parent outside the call: a job already stored, by id. */
export interface StoredParent {
  /** the stored job's id */
  jobId: string;
}

/** One job of a workflow, as the graph sees it. */
export interface FlowNode {
  /** unique within the call */
  key: string;
  /** the jobs it waits for: keys of this call, or stored jobs */
  dependsOn?: readonly (string | StoredParent)[] | undefined;
}

/** At most this many jobs in one workflow call, and parents per job. */
export const FLOW_LIMITS = { jobs: 10_000, parents: 100 } as const;

const invalid = (message: string): never => {
  throw new ValidationError('INVALID_FLOW', message);
};

/**
 * Check a workflow's graph: keys unique and well-formed, every parent known, no job waiting for
 * itself, no cycle (named in the error). Returns the nodes' indexes in an order where each comes
 * after the parents of the same call it waits for (stable: input order where the graph allows).
 */
export function planFlow(nodes: readonly FlowNode[]): number[] {
  if (nodes.length === 0) invalid('a workflow needs at least one job');
  if (nodes.length > FLOW_LIMITS.jobs) invalid(`a workflow holds at most ${FLOW_LIMITS.jobs} jobs; got ${nodes.length}`);
  const index = new Map<string, number>();
  nodes.forEach((n, i) => {
    validateKeyText('a workflow key', n.key, 255);
    if (index.has(n.key)) invalid(`workflow key "${n.key}" is used twice`);
    index.set(n.key, i);
  });
  // children of each node within the call, and how many of its parents are in the call
  const children: number[][] = nodes.map(() => []);
  const waiting = nodes.map((n, i) => {
    const deps = n.dependsOn ?? [];
    if (deps.length > FLOW_LIMITS.parents) invalid(`"${n.key}" waits for ${deps.length} jobs; at most ${FLOW_LIMITS.parents}`);
    const seen = new Set<string>();
    let inCall = 0;
    for (const d of deps) {
      const ref = typeof d === 'string' ? `key:${d}` : `id:${String(d?.jobId)}`;
      if (seen.has(ref)) invalid(`"${n.key}" names ${typeof d === 'string' ? `"${d}"` : `job ${d.jobId}`} twice in dependsOn`);
      seen.add(ref);
      if (typeof d !== 'string') {
        if (typeof d?.jobId !== 'string' || !/^[1-9][0-9]{0,18}$/.test(d.jobId)) invalid(`"${n.key}" waits for a stored job with an invalid id: ${JSON.stringify(d)}`);
        continue;
      }
      const p = index.get(d);
      if (p === undefined) invalid(`"${n.key}" waits for "${d}", which is not a key of this workflow (a stored job is named { jobId })`);
      if (p === i) invalid(`"${n.key}" waits for itself`);
      children[p as number]!.push(i);
      inCall++;
    }
    return inCall;
  });
  // Kahn's algorithm, taking ready nodes in input order
  const order: number[] = [];
  const ready = waiting.flatMap((w, i) => (w === 0 ? [i] : []));
  for (let r = 0; r < ready.length; r++) {
    const i = ready[r] as number;
    order.push(i);
    for (const c of children[i]!) if (--waiting[c]! === 0) ready.push(c);
  }
  if (order.length < nodes.length) invalid(`the workflow has a cycle: ${cycleOf(nodes, index, waiting).join(' → ')}`);
  return order;
}

/** One cycle among the nodes Kahn's algorithm left (each still waits for a parent of the call). */
function cycleOf(nodes: readonly FlowNode[], index: ReadonlyMap<string, number>, waiting: readonly number[]): string[] {
  // from any left node, keep stepping to a left parent: the walk must come back to a node it saw
  const parentLeft = (i: number): number => {
    for (const d of nodes[i]!.dependsOn ?? []) {
      const p = typeof d === 'string' ? index.get(d) : undefined;
      if (p !== undefined && waiting[p]! > 0) return p;
    }
    return -1;
  };
  const path: number[] = [];
  const at = new Map<number, number>();
  let i = waiting.findIndex((w) => w > 0);
  while (i >= 0 && !at.has(i)) {
    at.set(i, path.length);
    path.push(i);
    i = parentLeft(i);
  }
  // the walk went child → parent: read it backwards, parent → child, closing the loop
  const loop = path.slice(at.get(i) ?? 0).reverse().map((k) => nodes[k]!.key);
  return [...loop, loop[0] as string];
}

/** How a workflow job starts, given the statuses of the stored jobs it waits for (`startFlow`). */
export interface FlowStart {
  /** queued (nothing to wait for), waiting, or cancelled (a parent already failed, policy 'cancel') */
  status: 'queued' | 'waiting' | 'cancelled';
  /** parents not succeeded yet; null for a job without parents */
  pendingParents: number | null;
  /** the failed stored job that cancelled it (directly or through a parent of the call), or null */
  failedBy: { id: string; status: string } | null;
}

/**
 * Each job's start, in the jobs' order (parents first): a stored parent that succeeded counts as
 * done; one waiting, queued, running or retrying is waited for; one dead or cancelled cancels
 * the job and its descendants in the call under policy 'cancel', and is waited for under 'hold'.
 * Throws ValidationError naming a stored parent that does not exist (`statuses` lacks it).
 */
export function startFlow(
  jobs: readonly { parents: readonly number[]; storedParents?: readonly string[] | undefined }[],
  statuses: ReadonlyMap<string, string>,
  policy: 'cancel' | 'hold',
): FlowStart[] {
  const out: FlowStart[] = [];
  for (const j of jobs) {
    const stored = j.storedParents ?? [];
    for (const id of stored) if (!statuses.has(id)) invalid(`the workflow waits for job ${id}, which does not exist`);
    let pending = j.parents.length;
    let failedBy: FlowStart['failedBy'] = null;
    for (const id of stored) {
      const status = statuses.get(id) as string;
      if (status !== 'succeeded') pending++;
      if ((status === 'dead' || status === 'cancelled') && failedBy === null) failedBy = { id, status };
    }
    for (const at of j.parents) failedBy ??= out[at]!.failedBy;
    if (policy !== 'cancel') failedBy = null;
    const hasParents = j.parents.length + stored.length > 0;
    out.push({ status: failedBy ? 'cancelled' : pending > 0 ? 'waiting' : 'queued', pendingParents: hasParents ? pending : null, failedBy });
  }
  return out;
}

/** The last error of a job cancelled at insert because a stored parent had failed. */
export const parentFailedMessage = (f: { id: string; status: string }): string => `job ${f.id} it depends on ended ${f.status}`;
