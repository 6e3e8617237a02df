/**
 * Validation of everything a user hands to `enqueue`, before anything is written.
 * Bad input throws a `ValidationError` with a stable code; nothing reaches storage.
 */
import { ValidationError } from './errors.js';
import { MAX_PAYLOAD_DEPTH, checkDelay, checkTime, validateKeyText } from './limits.js';
import type { NewJob } from './storage.js';

/** When and where one job runs, and the keys that make it unique. Every field is checked before anything is written. */
export interface EnqueueOptions {
  /** Absolute time to run at (a Date or an ISO 8601 string), from 1970 to the end of 9999; not with `delayMs`. */
  runAt?: Date | string;
  /** Run after this many milliseconds from the database's now, at most 100 years; not with `runAt`. */
  delayMs?: number;
  /** The queue (default: the type's `queue`, else `default`). */
  queue?: string;
  /** Lower runs first, from −32768 to 32767 (default: the type's, else 0). */
  priority?: number;
  /** Attempts before the job is dead (default: the type's, else 5). */
  maxAttempts?: number;
  /** A second enqueue with the same key returns the first job instead of a new row; 1–255 characters, no NUL, not starting with `leasehold:`. */
  idempotencyKey?: string;
  /** Inactivity timeout per attempt: no `ctx.heartbeat()` for this long aborts it (default: the type's, else 5 min). */
  timeoutMs?: number;
  /** Hard bound on one attempt (default: the type's, else 1 h). */
  maxRuntimeMs?: number;
  /** the key this job counts under for its type's per-key limits (`keyConcurrency`, a per-key `rateLimit`) */
  concurrencyKey?: string;
  /**
   * One job per key. 'forever' (the default): as `idempotencyKey`. 'active': while a job with the
   * key is queued, failed or running, it is returned instead. 'period': one job per `periodMs`
   * window (aligned to the Unix epoch, by this process's clock). 'debounce': a waiting job with
   * the key takes this payload and run time instead; a running one lets a new job take the key.
   */
  unique?: UniqueOption;
}

/** One job per key: see `EnqueueOptions.unique`. */
export interface UniqueOption {
  /** 1–200 characters, no NUL. */
  key: string;
  /** `forever` (default), `active`, `period` or `debounce`. */
  mode?: 'forever' | 'active' | 'period' | 'debounce';
  /** The window of mode `period`, at least 1000 ms. */
  periodMs?: number;
}

/** What a job gets when neither its type nor its enqueue says: a client's `defaults` option. */
export interface JobDefaults {
  /** Default `default`. */
  queue: string;
  /** Default 0. */
  priority: number;
  /** Default 5. */
  maxAttempts: number;
  /** Default 5 min. */
  timeoutMs: number;
  /** Default 1 h. */
  maxRuntimeMs: number;
}

/** The defaults of every job: queue `default`, priority 0, 5 attempts, 5 min inactivity timeout, 1 h max runtime. */
export const DEFAULT_JOB_DEFAULTS: JobDefaults = {
  queue: 'default',
  priority: 0,
  maxAttempts: 5,
  timeoutMs: 5 * 60_000,
  maxRuntimeMs: 60 * 60_000,
};

/** Payloads are references, not blobs (DESIGN §3). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;

const NAME_RE = /^[A-Za-z0-9_.:\-/]{1,128}$/;

function invalid(message: string): never {
  throw new ValidationError('INVALID_OPTION', message);
}

/** A type, queue, schedule or lock name: 1–128 of `A-Za-z0-9_.:-/`, else a `ValidationError`. */
export function validateName(kind: string, value: unknown): string {
  if (typeof value !== 'string' || !NAME_RE.test(value)) {
    invalid(`${kind} must be 1-128 characters of letters, digits and _ . : - /; got ${JSON.stringify(value)}`);
  }
  return value;
}

function intOption(name: string, v: number | undefined, min: number, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    invalid(`${name} must be an integer between ${min} and ${max}; got ${String(v)}`);
  }
  return v;
}

/**
 * An upper bound of the UTF-8 size of `JSON.stringify(v)` when `v` is plain JSON, found in one
 * cheap pass; -1 when it is not, or nests deeper than MAX_PAYLOAD_DEPTH (a cycle does too): then
 * the exact walk below decides, with its precise message. Bounds: a string's JSON is at most 6
 * bytes per UTF-16 unit (an escape like \u001f) plus quotes, a finite number at most 24
 * characters. This keeps enqueue from stringifying (and UTF-8 encoding) every payload just to
 * measure it; only a payload near the limit is measured exactly.
 */
function jsonBound(v: unknown, depth: number): number {
  if (v === null) return 4;
  switch (typeof v) {
    case 'string':
      return 6 * v.length + 2;
    case 'boolean':
      return 5;
    case 'number':
      return Number.isFinite(v) ? 25 : -1;
    case 'object':
      break;
    default:
      return -1;
  }
  if (depth >= MAX_PAYLOAD_DEPTH) return -1;
  if (Array.isArray(v)) {
    let n = 2 + v.length;
    for (let i = 0; i < v.length; i++) {
      // a hole reads as undefined: -1, and the exact walk (which skips holes) decides
      const b = jsonBound(v[i], depth + 1);
      if (b < 0) return -1;
      n += b;
    }
    return n;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return -1;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  let n = 2 + keys.length;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const b = jsonBound(o[k], depth + 1);
    if (b < 0) return -1;
    n += 6 * k.length + 3 + b;
  }
  return n;
}

/** The exact check: throws INVALID_PAYLOAD naming the first offending path. */
function walkPayload(payload: unknown): void {
  const seen = new Set<object>();
  const walk = (v: unknown, path: string, depth: number): void => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new ValidationError('INVALID_PAYLOAD', `payload${path} is ${v}, which JSON cannot hold`);
      return;
    }
    if (typeof v !== 'object') throw new ValidationError('INVALID_PAYLOAD', `payload${path} is a ${typeof v}, which is not JSON`);
    if (seen.has(v)) throw new ValidationError('INVALID_PAYLOAD', `payload${path} is circular`);
    // deeper, JSON.stringify and this walk would run out of stack
    if (depth >= MAX_PAYLOAD_DEPTH) throw new ValidationError('INVALID_PAYLOAD', `payload nests deeper than ${MAX_PAYLOAD_DEPTH} arrays/objects`);
    seen.add(v);
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`, depth + 1));
    } else {
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) {
        const name = (v as { constructor?: { name?: string } }).constructor?.name ?? 'object';
        throw new ValidationError('INVALID_PAYLOAD', `payload${path} is a ${name}; only plain JSON objects are allowed (store dates as ISO strings)`);
      }
      for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`, depth + 1);
    }
    seen.delete(v);
  };
  walk(payload, '', 0);
}

function checkSize(json: string, maxBytes: number): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: short text needs no encoding to know
  if (json.length * 3 <= maxBytes) return;
  const bytes = new TextEncoder().encode(json).length;
  if (bytes > maxBytes) {
    throw new ValidationError('PAYLOAD_TOO_LARGE', `payload is ${bytes} bytes; the limit is ${maxBytes} (store a reference, not the data)`);
  }
}

/** validatePayload without producing the text, unless its size has to be measured. */
function checkPayload(payload: unknown, maxBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): void {
  const bound = jsonBound(payload, 0);
  if (bound >= 0 && bound <= maxBytes) return;
  if (bound < 0) walkPayload(payload);
  checkSize(JSON.stringify(payload), maxBytes);
}

/**
 * Check that `payload` is plain JSON (null, booleans, finite numbers, strings, arrays, plain
 * objects) and small enough. Dates, Maps, class instances, functions, BigInt, NaN and cycles
 * are refused rather than silently changed by JSON.stringify.
 */
export function validatePayload(payload: unknown, maxBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): string {
  if (jsonBound(payload, 0) < 0) walkPayload(payload);
  const json = JSON.stringify(payload);
  checkSize(json, maxBytes);
  return json;
}

/** Parse a JSON payload given as text (CLI, dashboard). */
export function parsePayloadText(text: string, maxBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ValidationError('INVALID_PAYLOAD', `payload is not valid JSON: ${(e as Error).message}`);
  }
  validatePayload(value, maxBytes);
  return value;
}

/** Build the row to insert from user input, or throw a `ValidationError`. */
export function buildNewJob(type: string, payload: unknown, opts: EnqueueOptions, defaults: JobDefaults, maxPayloadBytes?: number, nowMs = 0): NewJob {
  validateName('job type', type);
  checkPayload(payload, maxPayloadBytes);
  if (opts.runAt !== undefined && opts.delayMs !== undefined) invalid('give runAt or delayMs, not both');
  if (opts.delayMs !== undefined) checkDelay('delayMs', opts.delayMs);
  const unique = opts.unique === undefined ? undefined : uniqueOf(opts.unique, nowMs);
  if (unique?.idempotencyKey !== undefined && opts.idempotencyKey !== undefined) invalid("give idempotencyKey or a 'forever'/'period' unique key, not both");
  const key = opts.idempotencyKey === undefined ? (unique?.idempotencyKey ?? null) : ownKey('idempotencyKey', validateKeyText('idempotencyKey', opts.idempotencyKey, 255));
  const timeoutMs = intOption('timeoutMs', opts.timeoutMs, 1, defaults.timeoutMs);
  return {
    type,
    payload,
    queue: validateName('queue', opts.queue ?? defaults.queue),
    priority: intOption('priority', opts.priority, -32768, defaults.priority, 32767),
    runAt: opts.runAt === undefined ? undefined : checkTime('runAt', opts.runAt),
    runAfterMs: Math.round(opts.delayMs ?? 0),
    maxAttempts: intOption('maxAttempts', opts.maxAttempts, 1, defaults.maxAttempts, 1_000_000),
    idempotencyKey: key,
    timeoutMs,
    maxRuntimeMs: intOption('maxRuntimeMs', opts.maxRuntimeMs, 1, Math.max(defaults.maxRuntimeMs, timeoutMs)),
    ...(opts.concurrencyKey !== undefined ? { concurrencyKey: validateKeyText('concurrencyKey', opts.concurrencyKey, 255) } : {}),
    ...(unique?.unique ? { unique: unique.unique } : {}),
  };
}

/** Keys under `leasehold:` are leasehold's own (a batch's callback): a user's would take one's place. */
function ownKey(what: string, key: string): string {
  if (key.startsWith('leasehold:')) invalid(`${what} must not start with "leasehold:" (reserved for leasehold's own jobs); got ${JSON.stringify(key)}`);
  return key;
}

/** A unique option as storage takes it: an idempotency key (forever, period) or a unique key (active, debounce). */
function uniqueOf(u: UniqueOption, nowMs: number): { idempotencyKey?: string; unique?: NonNullable<NewJob['unique']> } {
  if (typeof u !== 'object' || u === null) invalid('unique must be { key, mode?, periodMs? }');
  const key = ownKey('unique.key', validateKeyText('unique.key', u.key, 200));
  const mode = u.mode ?? 'forever';
  if (mode === 'forever') return { idempotencyKey: key };
  if (mode === 'active' || mode === 'debounce') return { unique: { key, mode } };
  if (mode !== 'period') invalid(`unique.mode must be 'forever', 'active', 'period' or 'debounce'; got ${JSON.stringify(mode)}`);
  const p = u.periodMs;
  if (typeof p !== 'number' || !Number.isInteger(p) || p < 1000) invalid(`unique.periodMs must be an integer >= 1000 with mode 'period'; got ${String(p)}`);
  return { idempotencyKey: `${key}@${Math.floor(nowMs / p) * p}` };
}
