/**
 * Rules shared by every adapter's batched effect-ledger calls (effects.reserveMany, effects.completeMany).
 * Pure; nothing here does I/O.
 */
import { ValidationError } from './errors.js';

/**
 * A batch names each key once: two items on one key would each be answered as if asked alone,
 * which no single write can do (PostgreSQL's upsert refuses to touch a row twice in one
 * statement). The runtime never builds such a batch; a caller that does gets this error.
 */
export function assertDistinctEffectKeys(items: readonly { key: string }[], op: string): void {
  const seen = new Set<string>();
  for (const { key } of items) {
    if (seen.has(key)) throw new ValidationError('INVALID_OPTION', `${op}: effect key "${key}" appears twice in one batch`);
    seen.add(key);
  }
}
