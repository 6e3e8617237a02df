/** What an attempt needs from its worker (./attempt.ts). */
import type { Storage } from '../core/storage.js';
import type { Attempt } from './attempt.js';
import type { AttemptClock } from './attempt-clock.js';
import type { Completer } from './completer.js';
import type { EffectBatcher } from './effect-batcher.js';
import type { Logger } from './env.js';

/** What attempts need from their worker: one object, shared by all of the worker's attempts. */
export interface AttemptDeps {
  storage: Storage;
  effects: EffectBatcher;
  completer: Pick<Completer, 'submit'>;
  clock: Pick<AttemptClock, 'watch'>;
  /** renew this lease now; resolves false when it is lost (and the attempt was aborted) */
  renew: (attempt: Attempt) => Promise<boolean>;
  /** how long before its local expiry a lease is no longer trusted for starting an effect */
  leaseMarginMs: number;
  log: Logger;
  random: () => number;
  /** how long a handler gets to stop after its signal fires before its slot is taken back */
  abortGraceMs: number;
  /** called once per attempt, when its handler no longer needs its concurrency slot */
  slotFreed: (attempt: Attempt) => void;
  /** called once per attempt, when it is over: its outcome (a job status, 'lost', 'abandoned', …) written or not ours to write */
  ended: (attempt: Attempt, outcome: string) => void;
  /** `ctx.progress` writes at most once per this many ms; reports in between coalesce */
  progressIntervalMs: number;
}
