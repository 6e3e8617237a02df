/**
 * Handler module for the chaos workers (`leasehold worker --handlers <this file>`).
 *
 * A `chaos` job performs its one effect through `ctx.once`: a line appended to this process's
 * external ledger file in $CHAOS_LEDGER_DIR, with the pid, the attempt's lease token and the
 * time `fn` was entered. The ledger lives outside the database, so an effect run twice shows
 * there even when the database recorded it once. An anchor job first waits, holding its lease,
 * until the runner has released its tranche (the gate file $CHAOS_GATE holds the highest
 * released one): a lease holder to aim at, however fast the other jobs drain.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { defineJob } from '../../src/index.js';
import type { JobContext } from '../../src/index.js';

export interface ChaosPayload {
  /** 1-based enqueue order */
  seq: number;
  /** an anchor of this tranche: wait until the gate reaches it */
  anchor?: number;
}

/** One line of the external ledger: an entry to `fn`. */
export interface LedgerEntry {
  jobId: string;
  attempt: number;
  token: string;
  pid: number;
  /** Date.now() when fn was entered */
  at: number;
}

/** The effect key of a chaos job. */
export const effectKey = (jobId: string): string => `effect:${jobId}`;

/** How often a waiting process re-reads the gate file. */
const GATE_POLL_MS = 20;

function must(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`chaos handlers: ${name} is not set`);
  return v;
}

let released = 0;
const waiting = new Set<{ tranche: number; wake: () => void }>();
let poller: NodeJS.Timeout | null = null;

function readGate(): void {
  try {
    released = Math.max(released, Number(readFileSync(must('CHAOS_GATE'), 'utf8')) || 0);
  } catch {
    // not written yet: nothing is released
  }
  for (const w of [...waiting]) if (w.tranche <= released) w.wake();
  if (waiting.size === 0 && poller) {
    clearInterval(poller);
    poller = null;
  }
}

/** Resolves once `tranche` is released, or as soon as `signal` fires (never rejects). */
function whenReleased(tranche: number, signal: AbortSignal): Promise<void> {
  if (tranche <= released) return Promise.resolve();
  return new Promise((resolve) => {
    const w = {
      tranche,
      wake: () => {
        waiting.delete(w);
        signal.removeEventListener('abort', w.wake);
        resolve();
      },
    };
    waiting.add(w);
    signal.addEventListener('abort', w.wake, { once: true });
    // one poller per process, however many handlers wait
    poller ??= setInterval(readGate, GATE_POLL_MS);
    readGate();
  });
}

async function chaos(p: ChaosPayload, ctx: JobContext): Promise<void> {
  if (p.anchor !== undefined) await whenReleased(p.anchor, ctx.signal);
  if (ctx.signal.aborted) throw ctx.signal.reason;
  const ledger = path.join(must('CHAOS_LEDGER_DIR'), `${process.pid}.jsonl`);
  await ctx.once(effectKey(ctx.job.id), () => {
    const entry: LedgerEntry = { jobId: ctx.job.id, attempt: ctx.attempt, token: ctx.job.leaseToken ?? '', pid: process.pid, at: Date.now() };
    appendFileSync(ledger, `${JSON.stringify(entry)}\n`);
    return { pid: entry.pid, token: entry.token, at: entry.at };
  });
}

/** Small backoff, so rescued jobs run again within the run's time. */
const retry = { kind: 'exponential', baseMs: 50, factor: 2, maxMs: 500, jitter: 'equal' } as const;

export const jobs = [defineJob<ChaosPayload>({ type: 'chaos', retry, maxAttempts: 25, handler: chaos })];
