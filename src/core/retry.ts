/**
 * Retry policy: how long to wait before attempt n+1. Pure; the caller injects `random`
 * so tests (and property tests) can pin it.
 */
import { ValidationError } from './errors.js';
import { MAX_DELAY_MS } from './limits.js';

/** How a retry delay is randomised so that jobs failing together do not retry together. */
export type Jitter =
  /** no jitter: the exact delay */
  | 'none'
  /** uniform in [0, delay] (AWS "full jitter"): best at spreading a thundering herd */
  | 'full'
  /** uniform in [delay/2, delay]: keeps at least half the backoff */
  | 'equal';

/** How long a failed job waits before its next attempt (default: exponential from 1 s, doubling, up to 1 h, equal jitter). */
export type RetryPolicy =
  | {
      /** the same delay after every failure */
      kind: 'fixed';
      /** the delay, in ms (0 to 100 years) */
      delayMs: number;
      /** default `none` */
      jitter?: Jitter;
    }
  | {
      /** `baseMs`, then times `factor` after each further failure, up to `maxMs` */
      kind: 'exponential';
      /** the delay after the first failure, in ms */
      baseMs: number;
      /** the growth per failure (default 2) */
      factor?: number;
      /** the longest delay, in ms */
      maxMs: number;
      /** default `none` */
      jitter?: Jitter;
    };

/** 1 s, 2 s, 4 s … capped at 1 h, equal jitter: the default for every job type. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  kind: 'exponential',
  baseMs: 1_000,
  factor: 2,
  maxMs: 3_600_000,
  jitter: 'equal',
};

/** The delay before it jitters: what a person reading the policy would predict. */
export function nominalDelay(policy: RetryPolicy, attempt: number): number {
  if (policy.kind === 'fixed') return policy.delayMs;
  const factor = policy.factor ?? 2;
  // attempt 1 failed → base; attempt 2 failed → base·factor; computed in log space so large
  // attempt counts cannot overflow to Infinity before the cap applies.
  const exp = Math.max(0, attempt - 1);
  const log = Math.log(policy.baseMs) + exp * Math.log(factor);
  if (log >= Math.log(policy.maxMs)) return policy.maxMs;
  return Math.min(policy.maxMs, Math.round(Math.exp(log)));
}

/** The band [min, max] that a jittered delay lands in. */
export function jitterBand(policy: RetryPolicy, attempt: number): { min: number; max: number } {
  const d = nominalDelay(policy, attempt);
  switch (policy.jitter ?? 'none') {
    case 'none':
      return { min: d, max: d };
    case 'full':
      return { min: 0, max: d };
    case 'equal':
      return { min: Math.floor(d / 2), max: d };
  }
}

/**
 * Milliseconds to wait after failed attempt `attempt` (1-based).
 * @param random returns a float in [0, 1)
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number): number {
  const { min, max } = jitterBand(policy, attempt);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.min(max, min + Math.floor(r * (max - min + 1)));
}

export function validateRetryPolicy(policy: RetryPolicy): RetryPolicy {
  const bad = (msg: string): never => {
    throw new ValidationError('INVALID_OPTION', `invalid retry policy: ${msg}`);
  };
  if (policy.kind === 'fixed') {
    if (!Number.isFinite(policy.delayMs) || policy.delayMs < 0 || policy.delayMs > MAX_DELAY_MS) bad('delayMs must be from 0 to 100 years');
  } else if (policy.kind === 'exponential') {
    if (!Number.isFinite(policy.baseMs) || policy.baseMs <= 0) bad('baseMs must be > 0');
    if (!Number.isFinite(policy.maxMs) || policy.maxMs < policy.baseMs || policy.maxMs > MAX_DELAY_MS) bad('maxMs must be from baseMs to 100 years');
    if (policy.factor !== undefined && (!Number.isFinite(policy.factor) || policy.factor < 1)) bad('factor must be >= 1');
  } else {
    bad(`unknown kind ${(policy as { kind: string }).kind}`);
  }
  if (policy.jitter !== undefined && !['none', 'full', 'equal'].includes(policy.jitter)) bad(`unknown jitter ${policy.jitter}`);
  return policy;
}
