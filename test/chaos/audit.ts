/**
 * What a chaos run left behind, judged: lost and stuck jobs, jobs that ran under two valid
 * leases at once (from the attempt history), attempts missing from the history, and every
 * effect run more than once (from the external ledger), split into the documented window —
 * after `fn` started and before its record landed, its process was SIGKILLed or stopped, or the
 * server restarted, and its attempt was then rescued — and anything else.
 */
import type { AttemptRow, JobRow } from '../../src/core/index.js';
import { isTerminal } from '../../src/core/index.js';
import type { EffectRow } from '../../src/core/storage.js';
import type { ChaosOutcome } from './chaos.js';
import type { ChaosEvent } from './events.js';
import type { LedgerEntry } from './handlers.js';
import { effectKey } from './handlers.js';

export interface Figures {
  jobs: number;
  kills: number;
  zombies: number;
  /** rounds, and connections killed over all rounds */
  connKills: { rounds: number; connections: number } | null;
  restarts: number | null;
  lost: number;
  stuck: number;
  overlaps: number;
  /** jobs whose history does not hold one closed row per counted attempt */
  history: number;
  /** extra runs of an effect in the documented window */
  dupDied: number;
  /** extra runs of an effect outside it */
  dupOther: number;
  crashes: number;
}

export interface Audit {
  figures: Figures;
  /** one line per problem, enough to reproduce the reasoning */
  findings: string[];
  /** facts worth printing that are not failures */
  notes: string[];
}

const iso = (ms: number | Date | null | undefined) => (ms == null ? '-' : new Date(ms).toISOString().slice(11, 23));

function describeAttempts(attempts: AttemptRow[], pidOf: Map<string, number>): string {
  return attempts
    .map((a) => `#${a.attempt} pid ${pidOf.get(a.workerId) ?? '?'} ${iso(a.startedAt)}–${iso(a.finishedAt)} ${a.outcome}${a.errorCode ? ` ${a.errorCode}` : ''} token …${a.leaseToken.slice(-6)}`)
    .join('; ');
}

function describeEntries(entries: LedgerEntry[]): string {
  return entries.map((e) => `pid ${e.pid} attempt ${e.attempt} at ${iso(e.at)} token …${e.token.slice(-6)}`).join('; ');
}

function describeEvents(events: ChaosEvent[], pids: Set<number>): string {
  return events
    .filter((e) => 'pid' in e && pids.has(e.pid))
    .map((e) => (e.kind === 'zombie' ? e.stops.map((s) => `SIGSTOP pid ${e.pid} at ${iso(s.at)}, SIGCONT ${iso(s.contAt)}`).join('; ') : e.kind === 'kill' ? `SIGKILL pid ${e.pid} at ${iso(e.at)}` : e.kind))
    .join('; ') || 'none on these pids';
}

function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const i of items) m.set(key(i), [...(m.get(key(i)) ?? []), i]);
  return m;
}

/** Overlap and history problems of one job's attempts (empty when it is sound). */
function historyProblems(job: JobRow, attempts: AttemptRow[]): { overlap: string | null; history: string | null } {
  const sorted = [...attempts].sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || a.attempt - b.attempt);
  let overlap: string | null = null;
  for (let i = 1; i < sorted.length && !overlap; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (!prev.finishedAt || prev.finishedAt.getTime() > cur.startedAt.getTime()) overlap = `attempt ${prev.attempt} (until ${iso(prev.finishedAt)}) overlaps attempt ${cur.attempt} (from ${iso(cur.startedAt)})`;
  }
  // handed_back and snoozed attempts give their count back; a running attempt's row is written when it ends
  const counted = attempts.filter((a) => a.outcome !== 'handed_back' && a.outcome !== 'snoozed').length;
  const expected = job.status === 'running' ? job.attempts - 1 : job.attempts;
  const open = attempts.filter((a) => !a.finishedAt).length;
  const history = counted !== expected ? `${counted} counted attempt rows for ${job.attempts} attempts (${job.status})` : open > 0 ? `${open} attempt(s) never closed` : null;
  return { overlap, history };
}

/**
 * Is this extra run of `fn` in the documented window? Its attempt's record never landed: the
 * attempt was rescued (lease_expired), and between `fn`'s start and that rescue its process was
 * SIGKILLed or stopped (or stopped just before fn's first line and resumed into it), or the
 * server was restarted (cut off until the lease lapsed). Resolves
 * to what happened and how long after `fn` started, or null.
 */
/** fn's first line runs this soon after SIGCONT when the process was stopped inside once's last synchronous step. */
const RESUMED_INTO_FN_MS = 10;

function inWindow(e: LedgerEntry, attempt: AttemptRow | undefined, events: ChaosEvent[], pidOf: Map<string, number>): { cause: string; gap: number } | null {
  if (!attempt || attempt.outcome !== 'lease_expired' || !attempt.finishedAt || pidOf.get(attempt.workerId) !== e.pid) return null;
  const rescuedAt = attempt.finishedAt.getTime();
  const between = (at: number) => e.at <= at && at <= rescuedAt;
  for (const ev of events) {
    if (ev.kind === 'kill' && ev.pid === e.pid && between(ev.at)) return { cause: 'SIGKILLed', gap: ev.at - e.at };
    const stop = ev.kind === 'zombie' && ev.pid === e.pid ? ev.stops.find((x) => between(x.at)) : undefined;
    if (stop) return { cause: 'stopped', gap: stop.at - e.at };
    // stopped during the attempt and resumed straight into fn: the stop fell between once's
    // lease check and fn's first line, one synchronous step, so fn had started under the lease
    const resumed = ev.kind === 'zombie' && ev.pid === e.pid ? ev.stops.find((x) => x.at >= attempt.startedAt.getTime() && x.at <= rescuedAt && e.at >= x.contAt && e.at - x.contAt <= RESUMED_INTO_FN_MS) : undefined;
    if (resumed) return { cause: 'stopped at the door of fn (between its lease check and its first line) and resumed', gap: 0 };
    if (ev.kind === 'restart' && between(ev.at)) return { cause: 'cut off by the server restart', gap: ev.at - e.at };
  }
  return null;
}

export function audit(kind: string, out: ChaosOutcome): Audit {
  const findings: string[] = [];
  const notes: string[] = [];
  const pidOf = out.pidOfWorker;
  const jobsById = new Map(out.jobs.map((j) => [j.id, j]));
  const attemptsByJob = groupBy(out.attempts, (a) => a.jobId);
  const attemptByToken = new Map(out.attempts.map((a) => [a.leaseToken, a]));
  const effectByKey = new Map<string, EffectRow>(out.effects.map((e) => [e.key, e]));
  const ledgerByJob = groupBy(out.ledger, (e) => e.jobId);
  const f: Figures = {
    jobs: out.ids.length,
    kills: out.events.filter((e) => e.kind === 'kill').length,
    zombies: out.events.filter((e) => e.kind === 'zombie').length,
    connKills: kind === 'sqlite' ? null : { rounds: 0, connections: 0 },
    restarts: kind === 'sqlite' ? null : out.events.filter((e) => e.kind === 'restart').length,
    lost: 0,
    stuck: 0,
    overlaps: 0,
    history: 0,
    dupDied: 0,
    dupOther: 0,
    crashes: out.crashes.length,
  };
  for (const e of out.events) if (e.kind === 'connkill' && f.connKills) [f.connKills.rounds, f.connKills.connections] = [f.connKills.rounds + 1, f.connKills.connections + e.connections];

  let maxGap = 0;
  for (const id of out.ids) {
    const job = jobsById.get(id);
    const attempts = attemptsByJob.get(id) ?? [];
    const entries = ledgerByJob.get(id) ?? [];
    const effect = effectByKey.get(effectKey(id));
    const where = () => `${kind} job ${id}: attempts [${describeAttempts(attempts, pidOf)}]; ledger [${describeEntries(entries)}]`;
    if (!job) {
      f.lost++;
      findings.push(`LOST ${kind} job ${id}: no such row`);
      continue;
    }
    if (!isTerminal(job.status)) {
      f.stuck++;
      findings.push(`STUCK ${where()}; status ${job.status}, locked by ${job.lockedBy ?? '-'} until ${iso(job.lockedUntil)}`);
    } else if (job.status !== 'succeeded') {
      f.lost++;
      findings.push(`LOST ${where()}; ended ${job.status} (${job.lastErrorCode ?? '-'}: ${job.lastError ?? ''})`);
    } else if (effect?.state !== 'done' || entries.length === 0) {
      f.lost++;
      findings.push(`LOST ${where()}; succeeded but its effect is ${effect ? effect.state : 'not in the database ledger'}, run ${entries.length} time(s)`);
    }
    const { overlap, history } = historyProblems(job, attempts);
    if (overlap) {
      f.overlaps++;
      findings.push(`OVERLAP ${where()}; ${overlap}`);
    }
    if (history) {
      f.history++;
      findings.push(`HISTORY ${where()}; ${history}`);
    }
    for (const e of entries) {
      const a = attemptByToken.get(e.token);
      // fn entered after its attempt had ended: a run the fence should have refused
      if (a?.finishedAt && e.at > a.finishedAt.getTime()) notes.push(`${kind} job ${id}: fn entered at ${iso(e.at)} by pid ${e.pid}, after its attempt ${a.attempt} ended (${a.outcome} at ${iso(a.finishedAt)})`);
    }
    if (entries.length <= 1) continue;
    const recorded = (effect?.result as { token?: string } | undefined)?.token;
    const keep = entries.findIndex((e) => e.token === recorded);
    for (const [i, e] of entries.entries()) {
      if (i === keep) continue;
      const why = inWindow(e, attemptByToken.get(e.token), out.events, pidOf);
      if (why) {
        f.dupDied++;
        maxGap = Math.max(maxGap, why.gap);
        notes.push(`${kind} job ${id}: effect ran again: pid ${e.pid} was ${why.cause} ${why.gap} ms after entering fn, before its record landed (documented window)`);
      } else {
        f.dupOther++;
        findings.push(`DUPLICATE ${where()}; recorded run token …${(recorded ?? '-').slice(-6)}; events [${describeEvents(out.events, new Set(entries.map((x) => x.pid)))}]`);
      }
    }
  }
  const known = new Set(out.ids);
  for (const j of out.jobs) if (!known.has(j.id)) findings.push(`UNEXPECTED ${kind} job ${j.id} (${j.type}, ${j.status}) that the run never enqueued`);
  if (out.tornLines > 0) notes.push(`${kind}: ${out.tornLines} ledger line(s) cut short by a kill`);
  if (f.dupDied > 0) notes.push(`${kind}: longest time from entering fn to the kill, stop or restart, over the documented-window runs: ${maxGap} ms`);
  for (const c of out.crashes) findings.push(`CRASH ${kind} pid ${c.pid} exited mid-run without a signal from the run (${c.exit})\n${c.tail}`);
  const badExits = out.exits.filter((x) => x.code !== 0);
  if (badExits.length > 0) notes.push(`${kind}: workers not exiting 0 on SIGTERM at the end: ${JSON.stringify(badExits)}`);
  return { figures: f, findings, notes };
}

/** A run passes when nothing above is wrong and the plan ran in full. */
export function failed(a: Audit, aborted: string | null): boolean {
  const f = a.figures;
  return aborted !== null || f.lost + f.stuck + f.overlaps + f.history + f.dupOther + f.crashes > 0 || a.findings.length > 0;
}
