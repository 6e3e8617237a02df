/**
 * What a job hands on besides its status: the handler's return value (its result, stored with
 * the succeeded job by the finish itself) and the progress it reports while it runs. Pure: the
 * runtime turns values into the JSON text adapters store, refusing what cannot be stored.
 */
import type { ErrorInfo } from './storage-leases.js';
import { ValidationError } from './errors.js';

/** The largest result a job may return, as UTF-8 JSON; a bigger one fails the attempt. */
export const RESULT_LIMIT_BYTES = 64 * 1024;
/** The largest progress value, as UTF-8 JSON. */
export const PROGRESS_LIMIT_BYTES = 4 * 1024;
/** The longest progress note, in characters. */
export const PROGRESS_NOTE_LIMIT = 500;

/** A handler's return value as stored: `json` undefined means there is none (undefined, a function). */
export type EncodedResult = { ok: true; json: string | undefined } | { ok: false; error: ErrorInfo };

/** UTF-8 size of `s`, measured only when it might pass `limit` (at most 3 bytes per UTF-16 unit). */
function utf8Over(s: string, limit: number): number {
  if (s.length * 3 <= limit) return 0;
  const bytes = new TextEncoder().encode(s).length;
  return bytes > limit ? bytes : 0;
}

/**
 * The result text of a handler's return value, as JSON.stringify writes it (a Date becomes its
 * ISO string); one it cannot write (a cycle, a BigInt) or one over RESULT_LIMIT_BYTES is an error
 * the attempt records, never a crash of the worker.
 */
export function encodeResult(value: unknown, limit = RESULT_LIMIT_BYTES): EncodedResult {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    return { ok: false, error: { code: 'INVALID_RESULT', message: `the handler's return value is not JSON: ${(e as Error).message}`, stack: null } };
  }
  const bytes = json === undefined ? 0 : utf8Over(json, limit);
  if (bytes > 0) {
    return { ok: false, error: { code: 'RESULT_TOO_LARGE', message: `the handler returned ${bytes} bytes of JSON; the limit is ${limit} (store a reference, not the data)`, stack: null } };
  }
  return { ok: true, json };
}

/** A progress report as stored. */
export interface ProgressValue {
  /** the value, as JSON text */
  json: string;
  /** a short note for people, or null */
  note: string | null;
}

/** Check a `ctx.progress(value, note)` call; throws ValidationError (INVALID_PROGRESS) for what cannot be stored. */
export function encodeProgress(value: unknown, note?: string | null): ProgressValue {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    throw new ValidationError('INVALID_PROGRESS', `progress is not JSON: ${(e as Error).message}`);
  }
  if (json === undefined) throw new ValidationError('INVALID_PROGRESS', 'progress must be a JSON value (a number, string, object, …)');
  const bytes = utf8Over(json, PROGRESS_LIMIT_BYTES);
  if (bytes > 0) throw new ValidationError('INVALID_PROGRESS', `progress is ${bytes} bytes of JSON; the limit is ${PROGRESS_LIMIT_BYTES}`);
  if (note !== undefined && note !== null && typeof note !== 'string') throw new ValidationError('INVALID_PROGRESS', 'a progress note must be a string');
  const n = note ?? null;
  return { json, note: n !== null && n.length > PROGRESS_NOTE_LIMIT ? `${n.slice(0, PROGRESS_NOTE_LIMIT)}…` : n };
}
