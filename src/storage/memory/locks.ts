/**
 * Locks and semaphores in memory: rows (name, slot) with a token, plus a per-name fence counter
 * and slot count. Each call is one synchronous step. Semantics: src/core/schedules.ts.
 */
import { checkLockSlots, type AcquireLockParams, type LockGrant, type LockRow } from '../../core/schedules.js';
import type { LockStore } from '../../core/storage.js';
import { copyDate, newToken, type MemoryDb, type StoredLock } from './db.js';

const held = (l: StoredLock, now: Date): boolean => l.token !== null && l.expiresAt.getTime() > now.getTime();

export class MemoryLocks implements LockStore {
  constructor(private readonly db: MemoryDb) {}

  /** The lowest free slot with a fresh token and the next fence; null when every slot is held. */
  async acquire(p: AcquireLockParams): Promise<LockGrant | null> {
    const now = this.db.now();
    const stored = this.db.lockSlots.get(p.name) ?? null;
    const heldNow = [...this.db.locks.values()].filter((l) => l.name === p.name && held(l, now)).length;
    checkLockSlots(p.name, stored, p.slots, heldNow);
    for (let slot = 0; slot < p.slots; slot++) {
      const key = `${p.name}\0${slot}`;
      const cur = this.db.locks.get(key);
      if (cur && held(cur, now)) continue;
      const fence = (this.db.lockFences.get(p.name) ?? 0) + 1;
      this.db.lockFences.set(p.name, fence);
      this.db.lockSlots.set(p.name, p.slots);
      const token = newToken();
      const expiresAt = new Date(now.getTime() + p.ttlMs);
      this.db.locks.set(key, { name: p.name, slot, owner: p.owner, token, fence, acquiredAt: now, expiresAt });
      return { name: p.name, slot, token, fence, expiresAt: copyDate(expiresAt) };
    }
    return null;
  }

  /** expires_at = now + ttlMs, only while this token still holds it. */
  async extend(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    const now = this.db.now();
    const l = this.holding(p.name, p.token, now);
    if (!l) return false;
    l.expiresAt = new Date(now.getTime() + p.ttlMs);
    return true;
  }

  /** Clears the holding, only while this token still holds it. */
  async release(p: { name: string; token: string }): Promise<boolean> {
    const now = this.db.now();
    const l = this.holding(p.name, p.token, now);
    if (!l) return false;
    l.token = null;
    l.expiresAt = now;
    return true;
  }

  /** Held rows (token set), expired ones flagged, by name then slot. */
  async list(p: { name?: string } = {}): Promise<LockRow[]> {
    const nowMs = this.db.now().getTime();
    return [...this.db.locks.values()]
      .filter((l) => l.token !== null && (p.name === undefined || l.name === p.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.slot - b.slot))
      .map((l) => ({
        name: l.name,
        slot: l.slot,
        owner: l.owner,
        fence: l.fence,
        acquiredAt: copyDate(l.acquiredAt),
        expiresAt: copyDate(l.expiresAt),
        expired: l.expiresAt.getTime() <= nowMs,
      }));
  }

  private holding(name: string, token: string, now: Date): StoredLock | undefined {
    for (const l of this.db.locks.values()) if (l.name === name && l.token === token && held(l, now)) return l;
    return undefined;
  }
}
