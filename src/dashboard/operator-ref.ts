/**
 * Who did it, as the job's history records an operator's change made here: `dashboard:<label>`,
 * the label naming the session without revealing it (a short hash of the session id, or
 * `bearer` for the token in a header), and the client's address as the source.
 */
import { createHash } from 'node:crypto';
import type { OperatorRef } from '../core/storage.js';
import type { Ctx, Kit } from './context.js';

export function sessionLabel(sid: string): string {
  if (sid === 'bearer') return 'bearer';
  return `session-${createHash('sha256').update(`label:${sid}`).digest('hex').slice(0, 8)}`;
}

export function operatorOf(kit: Kit, c: Ctx): OperatorRef {
  const address = kit.auth.clientAddress(c);
  return { actor: `dashboard:${sessionLabel(c.get('sid'))}`, source: address === 'unknown' ? null : address.slice(0, 200) };
}
