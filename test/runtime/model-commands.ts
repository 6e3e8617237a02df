/**
 * The commands of the model-based test: each one a storage call made as a worker, a sweeper or
 * an operator would make it, with the core's decision where one is needed, checked against the
 * reference model (model.ts) — what the call answers, then every job row. Arguments are picks
 * (a job, a token of it) resolved against the model when the command runs, so a shrunk
 * sequence still means something; `toString()` is what a counterexample prints. The random
 * sequences of them are in model-arbitraries.ts.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { AttemptResult, Decision } from '../../src/core/index.js';
import { decideFinish, decideRescue } from '../../src/core/index.js';
import type { Ending, Model, ModelJob, Real } from './model.js';
import { POLICY, cancelInModel, checkDecision, claimInModel, compareJobs, dueInOrder, expiredInOrder, finishInModel, retryInModel } from './model.js';

export type Command = fc.AsyncCommand<Model, Real>;

const SNOOZE_MS = 1_500;
const fixed = (r: number) => () => r;

/** The decision the worker holding lease `tok` of `j` makes for `ending`, from what its claim counted. */
function workerDecision(j: ModelJob, tok: number, ending: Ending, random: number): Decision {
  const attempts = j.leases[tok]?.attempts as number;
  const result: AttemptResult =
    ending === 'success' ? { kind: 'success' }
    : ending === 'error' ? { kind: 'error', error: new Error('boom') }
    : ending === 'timeout' ? { kind: 'timeout', timeoutMs: 1_000 }
    : ending === 'permanent' ? { kind: 'permanent', error: { code: 'PERMANENT_FAILURE', message: 'no' } }
    : ending === 'snooze' ? { kind: 'snooze', delayMs: SNOOZE_MS }
    : ending === 'cancel' ? { kind: 'cancel', reason: 'by the handler' }
    : { kind: 'shutdown' };
  const d = decideFinish({ attempts, maxAttempts: j.maxAttempts }, result, POLICY, fixed(random));
  checkDecision(d, ending, attempts, j.maxAttempts, SNOOZE_MS);
  return d;
}

/** Write `items` as one leases.finish call; the answers must be the model's, in order. */
async function finishAll(m: Model, r: Real, items: { j: ModelJob; tok: number; d: Decision }[], what: string): Promise<void> {
  if (items.length === 0) return;
  const want = items.map(({ j, tok, d }) => ({ id: j.id, applied: finishInModel(m, j, tok, d) }));
  const params = items.map(({ j, tok, d }) => ({ id: j.id, leaseToken: r.tokens[m.jobs.indexOf(j)]?.[tok] as string, ...d }));
  assert.deepEqual(await r.storage.leases.finish({ items: params }), want, `${what}: which finishes landed`);
}

/** The job a pick names: among the running ones when `running` and there are any, else among those with a lease (or all). */
function pickJob(m: Model, pick: number, withLease: boolean, running = false): ModelJob | undefined {
  const leased = withLease ? m.jobs.filter((j) => j.leases.length > 0) : m.jobs;
  const runningOnes = leased.filter((j) => j.status === 'running');
  const from = running && runningOnes.length > 0 ? runningOnes : leased;
  return from[pick % Math.max(1, from.length)];
}

abstract class Base implements Command {
  check(m: Readonly<Model>): boolean {
    return this.applies(m);
  }
  protected applies(_m: Readonly<Model>): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.act(m, r);
    await compareJobs(m, r, this.toString());
  }
  protected abstract act(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

export class Enqueue extends Base {
  constructor(readonly type: string, readonly priority: number, readonly delayMs: number, readonly maxAttempts: number, readonly key: string | null) {
    super();
  }
  async act(m: Model, r: Real) {
    const existing = this.key === null ? undefined : m.jobs.find((j) => j.key === this.key);
    const [res] = await r.storage.jobs.insert({ jobs: [
      { queue: 'default', type: this.type, payload: {}, priority: this.priority, runAfterMs: this.delayMs, maxAttempts: this.maxAttempts, idempotencyKey: this.key, timeoutMs: 60_000, maxRuntimeMs: 600_000 },
    ] });
    assert.ok(res);
    assert.equal(res.created, existing === undefined, `${this}: created`);
    if (existing) return assert.equal(res.job.id, existing.id, `${this}: the existing job`);
    assert.ok(!m.jobs.some((j) => j.id === res.job.id), `${this}: a new id`);
    m.jobs.push({
      id: res.job.id, type: this.type, key: this.key, priority: this.priority, maxAttempts: this.maxAttempts, status: 'queued', attempts: 0,
      runAt: m.now + this.delayMs, lockedUntil: null, lockedBy: null, leases: [], live: null, finished: false, lastErrorCode: null, history: [],
    });
    r.tokens.push([]);
  }
  toString() {
    return `enqueue(${this.type}, priority ${this.priority}, delay ${this.delayMs}, max ${this.maxAttempts}, key ${this.key})`;
  }
}

export class Claim extends Base {
  constructor(readonly worker: string, readonly types: readonly string[], readonly limit: number, readonly leaseMs: number) {
    super();
  }
  async act(m: Model, r: Real) {
    const want = dueInOrder(m, this.types, this.limit);
    const got = await r.storage.leases.claim({ workerId: this.worker, types: this.types, queues: null, limit: this.limit, leaseMs: this.leaseMs });
    assert.deepEqual(got.map((c) => c.id).sort(), want.map((j) => j.id).sort(), `${this}: the jobs claimed`);
    for (const c of got) {
      const j = want.find((x) => x.id === c.id) as ModelJob;
      const tokens = r.tokens[m.jobs.indexOf(j)] as string[];
      assert.ok(!tokens.includes(c.leaseToken), `${this}: job ${j.id} gets a fresh token`);
      tokens.push(c.leaseToken);
      claimInModel(m, j, this.worker, this.leaseMs);
      assert.deepEqual([c.status, c.attempts, c.lockedUntil.getTime()], [j.status, j.attempts, j.lockedUntil], `${this}: the claimed row of job ${j.id}`);
    }
  }
  toString() {
    return `claim(${this.worker}, [${this.types.join(',')}], limit ${this.limit}, lease ${this.leaseMs})`;
  }
}

/**
 * A call under one lease token of one job: `back` counts back from the latest token (0: the
 * latest, live if the job runs; 1: the one before it …); `running` prefers a running job.
 */
abstract class ByToken extends Base {
  constructor(readonly jobPick: number, readonly back: number, readonly running: boolean) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.jobs.some((j) => j.leases.length > 0);
  }
  protected target(m: Model): { j: ModelJob; tok: number } {
    const j = pickJob(m, this.jobPick, true, this.running) as ModelJob;
    return { j, tok: j.leases.length - 1 - (this.back % j.leases.length) };
  }
  protected get picked(): string {
    return `${this.running ? 'running ' : ''}job#${this.jobPick}, token -${this.back}`;
  }
}

export class Heartbeat extends ByToken {
  constructor(jobPick: number, back: number, running: boolean, readonly leaseMs: number) {
    super(jobPick, back, running);
  }
  async act(m: Model, r: Real) {
    const { j, tok } = this.target(m);
    const holds = j.status === 'running' && j.live === tok;
    const lost = holds ? [] : [{ id: j.id, status: j.status }];
    if (holds) j.lockedUntil = m.now + this.leaseMs;
    const leaseToken = r.tokens[m.jobs.indexOf(j)]?.[tok] as string;
    assert.deepEqual((await r.storage.leases.heartbeat({ leases: [{ id: j.id, leaseToken }], leaseMs: this.leaseMs })).lost, lost, `${this}: leases lost`);
  }
  toString() {
    return `heartbeat(${this.picked}, lease ${this.leaseMs})`;
  }
}

export class Finish extends ByToken {
  constructor(jobPick: number, back: number, running: boolean, readonly ending: Ending, readonly random: number) {
    super(jobPick, back, running);
  }
  async act(m: Model, r: Real) {
    const { j, tok } = this.target(m);
    await finishAll(m, r, [{ j, tok, d: workerDecision(j, tok, this.ending, this.random) }], this.toString());
  }
  toString() {
    return `finish(${this.picked}, ${this.ending}, random ${this.random})`;
  }
}

/** A job running under a later lease than one it had before: where a paused worker wakes up. */
function zombieTarget(m: Model, jobPick: number, back: number): { j: ModelJob; tok: number } {
  const reclaimed = m.jobs.filter((j) => j.status === 'running' && j.leases.length > 1);
  const j = reclaimed[jobPick % reclaimed.length] as ModelJob;
  return { j, tok: j.leases.length - 2 - (back % (j.leases.length - 1)) };
}
const reclaimedExists = (m: Readonly<Model>) => m.jobs.some((j) => j.status === 'running' && j.leases.length > 1);

/** A zombie's heartbeat: an older token of a job that runs again under another. */
export class ZombieHeartbeat extends Heartbeat {
  protected override applies(m: Readonly<Model>) {
    return reclaimedExists(m);
  }
  protected override target(m: Model) {
    return zombieTarget(m, this.jobPick, this.back);
  }
  protected override get picked() {
    return `zombie of re-claimed job#${this.jobPick}, token -${this.back + 1}`;
  }
}

/** A zombie's finish: an older token of a job that runs again under another. */
export class ZombieFinish extends Finish {
  protected override applies(m: Readonly<Model>) {
    return reclaimedExists(m);
  }
  protected override target(m: Model) {
    return zombieTarget(m, this.jobPick, this.back);
  }
  protected override get picked() {
    return `zombie of re-claimed job#${this.jobPick}, token -${this.back + 1}`;
  }
}

/** A sweeper acting on what it read earlier: the lease may have been renewed or ended since. */
export class StaleRescue extends ByToken {
  async act(m: Model, r: Real) {
    const { j, tok } = this.target(m);
    const held = j.leases[tok] as { worker: string; attempts: number };
    const lease = { id: j.id, type: j.type, leaseToken: r.tokens[m.jobs.indexOf(j)]?.[tok] as string, lockedBy: held.worker, attempts: held.attempts, maxAttempts: j.maxAttempts };
    const d = decideRescue(lease, 'retry', POLICY, fixed(0.5));
    checkDecision(d, 'rescue-retry', held.attempts, j.maxAttempts, SNOOZE_MS);
    await finishAll(m, r, [{ j, tok, d }], this.toString());
  }
  toString() {
    return `staleRescue(${this.picked})`;
  }
}

export class Sweep extends Base {
  constructor(readonly types: readonly string[], readonly onExpired: 'retry' | 'fail', readonly random: number) {
    super();
  }
  async act(m: Model, r: Real) {
    const want = expiredInOrder(m, this.types);
    const found = await r.storage.leases.findExpired({ limit: 100, types: this.types });
    assert.deepEqual(found.map((l) => l.id), want.map((j) => j.id), `${this}: the expired leases, oldest first`);
    const items = found.map((lease) => {
      const j = want.find((x) => x.id === lease.id) as ModelJob;
      const tok = j.live as number;
      const expected = { id: j.id, type: j.type, leaseToken: r.tokens[m.jobs.indexOf(j)]?.[tok], lockedBy: j.lockedBy, attempts: j.attempts, maxAttempts: j.maxAttempts };
      const seen = { id: lease.id, type: lease.type, leaseToken: lease.leaseToken, lockedBy: lease.lockedBy, attempts: lease.attempts, maxAttempts: lease.maxAttempts };
      assert.deepEqual(seen, expected, `${this}: the lease of job ${j.id}`);
      const d = decideRescue(lease, this.onExpired, POLICY, fixed(this.random));
      checkDecision(d, this.onExpired === 'retry' ? 'rescue-retry' : 'rescue-fail', j.attempts, j.maxAttempts, SNOOZE_MS);
      return { j, tok, d };
    });
    await finishAll(m, r, items, this.toString());
  }
  toString() {
    return `sweep([${this.types.join(',')}], ${this.onExpired}, random ${this.random})`;
  }
}

/** A worker stopping: it hands back every lease it was ever given; only those it still holds land. */
export class Stop extends Base {
  constructor(readonly worker: string) {
    super();
  }
  async act(m: Model, r: Real) {
    const items = m.jobs.flatMap((j) => j.leases.flatMap((l, tok) => (l.worker === this.worker ? [{ j, tok, d: workerDecision(j, tok, 'shutdown', 0) }] : [])));
    await finishAll(m, r, items, this.toString());
  }
  toString() {
    return `stop(${this.worker})`;
  }
}

export class Admin extends Base {
  constructor(readonly op: 'cancel' | 'retry', readonly jobPick: number) {
    super();
  }
  protected override applies(m: Readonly<Model>) {
    return m.jobs.length > 0;
  }
  async act(m: Model, r: Real) {
    const j = pickJob(m, this.jobPick, false) as ModelJob;
    const applied = this.op === 'cancel' ? cancelInModel(m, j) : retryInModel(m, j);
    const res = this.op === 'cancel' ? await r.storage.jobs.cancel({ id: j.id }) : await r.storage.jobs.retry({ id: j.id });
    assert.deepEqual([res.applied, res.job?.status], [applied, j.status], `${this}: applied, and the status after`);
  }
  toString() {
    return `${this.op}(job#${this.jobPick})`;
  }
}

export class Jump extends Base {
  constructor(readonly ms: number) {
    super();
  }
  async act(m: Model, r: Real) {
    m.now += this.ms;
    await r.setNow(m.now);
    assert.equal((await r.storage.now()).getTime(), m.now, `${this}: the database's clock`);
  }
  toString() {
    return `jump(+${this.ms} ms)`;
  }
}
